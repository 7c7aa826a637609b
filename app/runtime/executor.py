"""The executor: runs each runnable action of a session exactly once and records its answer.

It subscribes to the session's stream. Before running an action it saves a checkpoint
("started up to here"); the observation it then appends (``cause`` = the action's seq) marks
the action done. After a crash, an action that was started but has no observation is never
run again: it gets an ``error`` observation saying it was interrupted and may have partly run.
Actions appended while no executor ran were never started, and simply run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from uuid import UUID

from app.config import Settings
from app.events import (
    OBSERVATION_KINDS,
    Action,
    ErrorObservation,
    Observation,
    RuntimeStatus,
)
from app.runtime.errors import SandboxError
from app.runtime.protocol import Runtime
from app.store import DuplicateEventError, EventStore, Position, RecordedEvent

log = logging.getLogger(__name__)

#: Kinds the sandbox runs (MCP calls belong to the tools service).
RUNNABLE_KINDS = frozenset({"run", "file.read", "file.write", "file.edit"})


def checkpoint_name(session_id: UUID) -> str:
    return f"executor:{session_id}"


class Executor:
    def __init__(
        self,
        store: EventStore,
        session_id: UUID,
        runtime: Runtime,
        *,
        settings: Settings | None = None,
        runtime_name: str = "",
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.runtime = runtime
        self.settings = settings or store.settings
        self.runtime_name = runtime_name or getattr(runtime, "name", "")
        self._failed: str | None = None

    async def run(self) -> None:
        """Recover, then serve the session until cancelled, heartbeating the sandbox."""
        heartbeat = asyncio.create_task(self._heartbeat(), name="chronicle-sandbox-heartbeat")
        try:
            last_seq = await self.recover()
            async with self.store.subscribe(self.session_id, after_seq=last_seq) as stream:
                async for event in stream:
                    if event.kind in RUNNABLE_KINDS:
                        await self.handle(event)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    async def _heartbeat(self) -> None:
        """Tell the reaper this sandbox is in use, also while no action arrives."""
        while True:
            await asyncio.sleep(self.settings.sandbox_heartbeat_interval)
            try:
                await self.runtime.heartbeat()
            except SandboxError as exc:
                log.info("heartbeat of session %s's sandbox failed: %s", self.session_id, exc)

    async def recover(self) -> int:
        """Answer interrupted actions, run never-started ones; the last seq looked at."""
        events = await self.store.read(self.session_id)
        answered = {e.cause for e in events if e.kind in OBSERVATION_KINDS and e.cause}
        started = await self.store.load_checkpoint(checkpoint_name(self.session_id))
        for event in events:
            if event.kind not in RUNNABLE_KINDS or event.seq in answered:
                continue
            if started is not None and event.global_position <= started.global_position:
                await self._answer(
                    event,
                    ErrorObservation(
                        message=(
                            f"this {event.kind} action was interrupted: the executor stopped "
                            "while it ran, so it may have partly run. It was not run again; "
                            "check the sandbox's state before repeating it."
                        ),
                        error_type="interrupted",
                    ),
                )
            else:
                await self.handle(event)
        return events[-1].seq if events else 0

    async def handle(self, event: RecordedEvent) -> None:
        action = event.event()
        assert isinstance(action, Action)
        if self._failed is not None:
            unavailable = f"the sandbox is unavailable: {self._failed}"
            await self._answer(event, ErrorObservation(message=unavailable, error_type="sandbox"))
            return
        await self.store.save_checkpoint(
            checkpoint_name(self.session_id), Position(event.tx, event.global_position)
        )
        timeout = self.settings.action_timeouts.get(event.kind)
        try:
            observation = await self.runtime.execute(action, timeout=timeout)
        except SandboxError as exc:
            self._failed = str(exc)
            log.warning("sandbox of session %s failed: %s", self.session_id, exc)
            await self.store.append(
                self.session_id,
                [RuntimeStatus(kind="runtime.failed", runtime=self.runtime_name, message=str(exc))],
            )
            observation = ErrorObservation(
                message=f"the sandbox stopped answering, so the action did not complete: {exc}",
                error_type="sandbox",
            )
        await self._answer(event, observation)

    async def _answer(self, event: RecordedEvent, observation: Observation) -> None:
        try:
            await self.store.append(
                self.session_id, [observation.model_copy(update={"cause": event.seq})]
            )
        except DuplicateEventError:
            log.info("action %s of %s already has an observation", event.seq, self.session_id)
