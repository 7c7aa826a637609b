"""The executor: the action worker of the session's sandbox, which it keeps alive.

``ActionWorker`` (app/store/action_worker.py) gives the guarantees: each sandbox action is run
at most once and answered exactly once, and one started before a crash is reported as
interrupted, never run again. This module says how one action runs, and what happens when
the sandbox dies.

Only a failed liveness check marks the sandbox dead: an action that fails or times out while
the sandbox still answers ``/alive`` gets its ``error`` and nothing else changes. A dead
sandbox is restarted (closed, started, waited for) and a ``runtime.restarted`` event tells
the agent that its processes are gone; the action that found it dead gets an ``error``. A
run restarts its sandbox at most ``max_restarts`` times (``sandbox_max_restarts``, default
3): past that, or when a restart fails, ``runtime.failed`` is recorded, the action at hand is
answered with the reason and the worker stops, so the session's run ends in ``error``. A
heartbeat keeps the sandbox from being reaped while idle and finds a death between actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import NoReturn
from uuid import UUID

from app.events import (
    Action,
    ErrorObservation,
    Event,
    Observation,
    RuntimeRestarted,
    RuntimeStatus,
    Service,
)
from app.runtime.config import ExecutorConfig
from app.runtime.errors import SandboxError
from app.runtime.lifecycle import describe
from app.runtime.protocol import Runtime
from app.runtime.provisioner import HostLostError
from app.store import (
    ActionWorker,
    EventStore,
    ServiceFailed,
    ServiceInterrupted,
    WorkerInterrupted,
    WorkerStopped,
    worker_checkpoint,
)

log = logging.getLogger(__name__)

#: The executor's checkpoint prefix (kept from before the action worker: old logs resume).
NAME = "executor"
#: Liveness checks before a sandbox counts as dead, and the pause between them.
LIVENESS_ATTEMPTS = 3
LIVENESS_PAUSE = 0.3

RESTART_NOTE = (
    "The sandbox died ({reason}) and was restarted (restart {restart} of at most {limit} in "
    "this run). Every process you started in it is gone: running commands, servers, "
    "background jobs. The shell is new: its working directory and exported variables are "
    "reset. Files in the workspace are kept; files outside it (such as /tmp or installed "
    "packages) may be gone."
)


def checkpoint_name(session_id: UUID) -> str:
    return worker_checkpoint(NAME, session_id)


class SandboxHandler:
    """Runs sandbox actions for an ``ActionWorker``; restarts a sandbox that died."""

    service: Service = "sandbox"
    name = NAME
    title = "executor"

    def __init__(
        self, store: EventStore, session_id: UUID, runtime: Runtime, config: ExecutorConfig
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.runtime = runtime
        self.config = config
        self.restarts = 0
        #: Counts sandboxes: a failure seen in an older one needs no new restart.
        self.generation = 0
        #: Why no sandbox can serve any more (set once, when restarting is over).
        self.gone: str | None = None
        #: Whether it is gone with its host (the session is interrupted, not failed).
        self.host_lost = False
        self._lock = asyncio.Lock()

    async def handle(self, action: Action) -> Observation:
        async with self._lock:  # never run into a restart in progress
            if self.gone is not None:
                raise self._failed()
            generation = self.generation
        timeout = self.config.action_timeouts.get(action.kind)
        try:
            return await self.runtime.execute(action, timeout=timeout)
        except SandboxError as exc:
            failure = str(exc)
        if await self.recover(generation, failure):
            return ErrorObservation(
                message=f"the sandbox died while this {action.kind} action ran ({failure}), "
                "so it may have partly run. A fresh sandbox was started: every process in "
                "the old one is gone; files in the workspace are kept.",
                error_type="sandbox_restarted",
            )
        return ErrorObservation(
            message=f"the sandbox could not complete this {action.kind} action: {failure}",
            error_type="sandbox",
        )

    async def recover(self, generation: int, reason: str) -> bool:
        """After a failure seen in sandbox ``generation``: True if it has been replaced since
        (now, or by someone else meanwhile), False if it is alive (the failure was only the
        action's). ``ServiceFailed`` when it is dead and cannot be replaced."""
        async with self._lock:
            if self.gone is not None:
                raise self._failed()
            if self.generation != generation:
                return True
            if await self._alive():
                return False
            await self._restart(reason)
            return True

    async def _alive(self) -> bool:
        """The liveness check: a few tries, so one slow answer does not kill a sandbox."""
        for attempt in range(LIVENESS_ATTEMPTS):
            if await self.runtime.alive():
                return True
            if attempt + 1 < LIVENESS_ATTEMPTS:
                await asyncio.sleep(LIVENESS_PAUSE)
        return False

    async def _restart(self, reason: str) -> None:
        limit = self.config.max_restarts
        name = describe(self.runtime)[0]
        if self.restarts >= limit:
            await self._give_up(
                name,
                f"the sandbox died ({reason}) and was not restarted: "
                + (
                    f"this run already restarted it {limit} times (sandbox_max_restarts)"
                    if limit
                    else "restarts are off (sandbox_max_restarts = 0)"
                ),
            )
        log.warning("session %s: the sandbox died (%s); restarting it", self.session_id, reason)
        with contextlib.suppress(Exception):  # whatever is left of it goes
            await self.runtime.close()
        try:
            await self.runtime.start()
            await self.runtime.wait_ready(self.config.ready_timeout)
        except SandboxError as exc:
            with contextlib.suppress(Exception):
                await self.runtime.close()
            if isinstance(exc, HostLostError):
                self.host_lost = True
                await self._give_up(
                    name,
                    f"the sandbox died ({reason}) and {exc}, so the session is interrupted: "
                    "resume it to go on, on another host",
                )
            await self._give_up(
                name, f"the sandbox died ({reason}) and could not be restarted: {exc}"
            )
        self.restarts += 1
        self.generation += 1
        name, sandbox_id, digest = describe(self.runtime)
        await self._record(
            RuntimeRestarted(
                runtime=name,
                sandbox_id=sandbox_id,
                image_digest=digest,
                reason=reason,
                restart=self.restarts,
                max_restarts=limit,
                message=RESTART_NOTE.format(reason=reason, restart=self.restarts, limit=limit),
            )
        )

    async def _give_up(self, runtime_name: str, message: str) -> NoReturn:
        self.gone = message
        log.error("session %s: %s", self.session_id, message)
        await self._record(
            RuntimeStatus(kind="runtime.failed", runtime=runtime_name, message=message)
        )
        raise self._failed()

    def _failed(self) -> ServiceFailed:
        """What the handler raises once no sandbox can serve: interrupted with its host."""
        assert self.gone is not None
        return ServiceInterrupted(self.gone) if self.host_lost else ServiceFailed(self.gone)

    async def _record(self, event: Event) -> None:
        try:
            await self.store.append(self.session_id, [event])
        except Exception as exc:  # the restart itself stands; the worker reports the store
            log.error("session %s: could not record %s: %s", self.session_id, event.kind, exc)


class Executor:
    """The session's sandbox worker: an ``ActionWorker`` with a ``SandboxHandler``, and a
    heartbeat that keeps the sandbox from being reaped and notices when it dies while idle."""

    def __init__(
        self,
        store: EventStore,
        session_id: UUID,
        runtime: Runtime,
        config: ExecutorConfig | None = None,
    ) -> None:
        self.handler = SandboxHandler(store, session_id, runtime, config or ExecutorConfig())
        self.worker = ActionWorker(store, session_id, self.handler)

    async def run(self) -> NoReturn:
        """Serve the session until cancelled; ``WorkerStopped`` when the sandbox is gone for
        good or answers cannot be recorded."""
        worker = asyncio.create_task(self.worker.run(), name="chronicle-executor")
        heartbeat = asyncio.create_task(self._heartbeat(), name="chronicle-sandbox-heartbeat")
        try:
            await asyncio.wait({worker, heartbeat}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (heartbeat, worker):
                task.cancel()
            results = await asyncio.gather(worker, heartbeat, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result
        if self.handler.host_lost:
            raise WorkerInterrupted(self.handler.gone or "the sandbox's host is gone")
        raise WorkerStopped(self.handler.gone or "the executor stopped")

    async def _heartbeat(self) -> None:
        """Tell the reaper the sandbox is in use; a failed heartbeat means a liveness check.
        Returns when the sandbox is gone for good."""
        handler = self.handler
        while True:
            await asyncio.sleep(handler.config.heartbeat_interval)
            generation = handler.generation
            try:
                await handler.runtime.heartbeat()
                continue
            except SandboxError as exc:
                failure = f"its heartbeat failed: {exc}"
            log.info("session %s: %s", handler.session_id, failure)
            try:
                await handler.recover(generation, failure)
            except ServiceFailed:
                return
