"""A worker: claims sessions that must run, runs each from its log, hands them over on exit.

Sessions to run are rows in ``session_leases`` (``app.sessions.sql.session_leases``). A worker wakes
when a run is requested (LISTEN ``chronicle_runs``), when a lease it could take over is due,
and on a poll as a safety net; it claims a session, runs it with the session runner (a resume
from the log: an action started by a worker that died is reported interrupted, never run
again), renews the lease while it runs, and releases it when the agent ends or needs the
user. The runner also holds the session's claim (an advisory lock), so a worker and
``chronicle run``/``resume`` never run one session at once.

- A worker that dies (kill -9) renews nothing: its lease expires and another worker takes
  the session over, its step in flight again within ``worker_lease_duration`` plus 5 s (a
  worker imports its model client once it sees a session run, not when it takes one over).
  A model call the dead worker had in flight is recorded by the new holder as ``lost``
  (``app.sessions.lost_calls``).
- A worker whose renewal is refused (it stalled past its lease and another took over) stops
  that run at once.
- ``stop`` drains: no new claims; each session finishes the step in flight (the model call
  and the actions it asked for) and stops before its next model call; its lease is handed
  back for another worker; then ``run_worker`` returns. ``abort``, or a drain longer than
  ``worker_drain_timeout``, stops the runs at once (what is in flight is reported
  interrupted when another worker resumes), and the caller's ``after_run`` work still going
  (an evaluation trial's scoring: a worker's sweep scores it later).
- A session whose workers keep dying while running it is given up after
  ``worker_max_attempts`` claims, with an error in its log.
- A run the database refuses for now (its disk full, out of memory or connections:
  ``app.store.transient``) keeps its request: it is handed back and tried again after
  ``worker_refused_backoff`` seconds, twice as long at each refusal in a row (at most
  ``worker_refused_backoff_max``), and a failure whose error the log cannot take yet is kept
  the same way, so the session says why it ended once its log can be written again. A run
  whose sandbox finds no room on any host of a host pool (``NoCapacityError``) is handed
  back the same way.

A replay or a fork the API recorded is run as one (``app.sessions.worker_runs``).

Stale sandboxes are reaped on a timer (the Docker reaper of ``chronicle runtime reap``), and
the caller's ``sweep`` runs on another (an evaluation run a dead worker left unscored is
finished by whichever worker sweeps next).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from app.config import Settings
from app.events import AgentState
from app.events.session_config import SessionConfig
from app.llm.gateway import preload_client
from app.runtime.kinds import KINDS
from app.runtime.provisioner import NoCapacityError
from app.sessions.lost_calls import record_lost_call
from app.sessions.runner import (
    DatabaseGoneError,
    RunningElsewhereError,
    SessionError,
    SessionOptions,
    recorded_config,
)
from app.sessions.sql import session_leases as leases
from app.sessions.sql.session_leases import Lease, ReleaseOutcome
from app.sessions.step_gate import StepGate
from app.sessions.worker_runs import run_claimed
from app.store import EventStore, refused_for_now

log = logging.getLogger(__name__)

ROLE = "worker"
#: Recorded as the session's ``agent.state`` ``stopped`` reason when a worker drains.
DRAINED = "the worker is shutting down; another worker continues the session"
ABORTED = "the worker was stopped"
DRAIN_TIMED_OUT = "the worker was stopped (its steps in flight outlasted worker_drain_timeout)"
LEASE_LOST = "the worker lost its lease on the session; another worker continues it"

#: How a run ended, as far as its lease is concerned.
RunEnding = Literal["ended", "failed", "drained", "busy", "lease_lost", "database_gone", "refused"]
#: Called with a session's id once its run ended and its lease was released (an evaluation
#: trial is scored then: ``app.evaluation.api_runs.trial_ended``, passed in by the caller).
AfterRun = Callable[[UUID], Awaitable[None]]
#: Called every ``worker_sweep_interval`` seconds: finishes what a worker that died left half
#: done after a run ended (``app.evaluation.run_recovery.recover_runs``, passed in by the caller).
Sweep = Callable[[], Awaitable[None]]


def new_worker_id() -> str:
    """``host/pid/random``: unique per process, and says where the process is."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def release_plan(
    ending: RunEnding, *, busy_retry_after: float, refused_retry_after: float = 0.0
) -> tuple[ReleaseOutcome, float]:
    """How to release a lease after a run ended so (the outcome, seconds before the session
    may be claimed again). An ended or failed run is done (its row goes unless the session was
    requested again meanwhile); a drained one is handed back at once; one that another process
    was running, or that the database refused for now, is tried again later. A lost lease is
    someone else's now: the release is refused, harmlessly; a lost database makes it fail,
    and the lease expires instead."""
    if ending in ("ended", "failed"):
        return "ended", 0.0
    if ending == "busy":
        return "handed_back", busy_retry_after
    if ending == "refused":
        return "handed_back", refused_retry_after
    return "handed_back", 0.0


def refused_backoff(refusals: int, first: float, longest: float) -> float:
    """Seconds before trying again a run refused ``refusals`` times in a row."""
    return min(first * 2 ** min(refusals - 1, 30), longest)


def wait_before_claiming(poll: float, due_in: float | None) -> float:
    """Seconds to sleep when nothing could be claimed: until the next lease falls due, at
    most ``poll`` (a lease that expires is announced by nobody)."""
    if due_in is None:
        return poll
    return min(poll, max(due_in, 0.05))


def gave_up_reason(attempts: int) -> str:
    return (
        f"the session was given up after {attempts - 1} workers stopped without finishing "
        "it (each died or lost the database while running it); resume it to try again"
    )


@dataclass
class WorkerRun:
    """One session a worker runs: its lease, the runner's task, why it was cancelled."""

    lease: Lease
    task: asyncio.Task[object]
    gate: StepGate
    cancelled_because: RunEnding | None = None

    def cancel(self, ending: RunEnding, message: str) -> None:
        if self.cancelled_because is None and not self.task.done():
            self.cancelled_because = ending
            self.task.cancel(message)


class Worker:
    def __init__(
        self,
        store: EventStore,
        settings: Settings,
        worker_id: str,
        max_sessions: int,
        after_run: AfterRun | None = None,
        sweep: Sweep | None = None,
    ) -> None:
        self.after_run = after_run
        self.sweep = sweep
        self.store = store
        self.settings = settings
        self.worker_id = worker_id
        self.max_sessions = max_sessions
        self.draining = asyncio.Event()
        self.runs: dict[UUID, WorkerRun] = {}
        self._wake = asyncio.Event()
        self._serving: set[asyncio.Task[None]] = set()
        self._hooks: set[asyncio.Future[None]] = set()
        self._client_loading = False
        #: Sessions whose runs the database refused for now, and how many times in a row.
        self._refusals: dict[UUID, int] = {}

    # -- the claim loop --------------------------------------------------------------------

    async def serve(self, stop: asyncio.Event, abort: asyncio.Event) -> None:
        async with leases.run_requests(self.store) as requests:
            helpers = [
                asyncio.create_task(self._doorbell(requests), name="chronicle-worker-doorbell"),
                asyncio.create_task(self._ring_on(stop), name="chronicle-worker-stop"),
                asyncio.create_task(self._presence(), name="chronicle-worker-presence"),
                asyncio.create_task(self._reaper(), name="chronicle-worker-reaper"),
                asyncio.create_task(self._sweeper(), name="chronicle-worker-sweeper"),
            ]
            try:
                await self._claim_until(stop)
                log.info("worker %s drains %d session(s)", self.worker_id, len(self.runs))
                self.draining.set()
                await self.finish_runs(abort)
            finally:
                self._stop_all(ABORTED)  # cancelled ourselves: stop them, hand them back
                await asyncio.gather(*self._serving, return_exceptions=True)
                for helper in helpers:
                    helper.cancel()
                await asyncio.gather(*helpers, return_exceptions=True)
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(5):
                        await leases.worker_gone(self.store, self.worker_id)

    async def _claim_until(self, stop: asyncio.Event) -> None:
        poll = self.settings.store.poll_interval
        while not stop.is_set():
            self._wake.clear()
            lease = None
            if len(self.runs) < self.max_sessions:
                try:
                    lease = await leases.claim_next(
                        self.store, self.worker_id, self.settings.worker.lease_duration
                    )
                except Exception as exc:  # the database away or not migrated: keep polling
                    log.warning("worker %s cannot claim sessions: %s", self.worker_id, exc)
            if lease is not None:
                # (a session of its own imports the model client as its sandbox starts, if
                # it has a model to call: app/sessions/runner.py)
                self._start(lease)
                continue
            timeout = poll
            if len(self.runs) < self.max_sessions:
                with contextlib.suppress(Exception):
                    outlook = await leases.lease_outlook(self.store, worker_id=self.worker_id)
                    if outlook.held_elsewhere:  # another worker's session may become ours
                        self._load_model_client()
                    timeout = wait_before_claiming(poll, outlook.seconds_until_due)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()

    def _load_model_client(self) -> None:
        """Import the model client (litellm: seconds of CPU) in a thread of its own, once, as
        soon as another worker runs a session this one may have to take over: imported at the
        takeover, it held the session's next model call back 10-20 s past the lease on a
        loaded machine. A worker alone, or whose sessions have no model to call (scripted,
        replayed, refused for want of a model), never pays for it: each session it runs
        imports the client as its sandbox starts when it has a model to call."""
        if not self._client_loading:
            self._client_loading = True
            threading.Thread(
                target=preload_client, name="chronicle-worker-model-client", daemon=True
            ).start()

    async def _doorbell(self, requests: leases.RunRequests) -> None:
        while True:
            if await requests.wait(self.settings.store.poll_interval):
                self._wake.set()

    async def _ring_on(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self._wake.set()

    async def finish_runs(self, abort: asyncio.Event) -> None:
        """Until every run has ended and been released; ``abort``, or ``worker_drain_timeout``
        passing, cancels the runs still going."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.worker.drain_timeout
        aborting = asyncio.create_task(abort.wait())
        try:
            while serving := {task for task in self._serving if not task.done()}:
                await asyncio.wait(
                    {aborting, *serving},
                    timeout=max(deadline - loop.time(), 0.0),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if aborting.done() or loop.time() >= deadline:
                    self._stop_all(ABORTED if aborting.done() else DRAIN_TIMED_OUT)
                    await asyncio.gather(*self._serving, return_exceptions=True)
        finally:
            aborting.cancel()

    # -- one session -----------------------------------------------------------------------

    def _start(self, lease: Lease) -> None:
        serving = asyncio.create_task(
            self.serve_lease(lease), name=f"chronicle-worker-{lease.session_id}"
        )
        self._serving.add(serving)
        serving.add_done_callback(self._served)

    def _served(self, task: asyncio.Task[None]) -> None:
        self._serving.discard(task)
        self._wake.set()  # a slot is free
        if not task.cancelled() and task.exception() is not None:
            log.error("worker %s: a run failed", self.worker_id, exc_info=task.exception())

    async def serve_lease(self, lease: Lease) -> None:
        session = lease.session_id
        if lease.taken_over_from:
            log.warning(
                "worker %s takes session %s over from %s (attempt %d)",
                self.worker_id, session, lease.taken_over_from, lease.attempts,
            )  # fmt: skip
            await record_lost_call(self.store, session, lease.taken_over_from)
        if lease.attempts > self.settings.worker.max_attempts:
            if not await self._record_error(session, gave_up_reason(lease.attempts)):
                await self._release(lease, "refused")
                return
            await self._release(lease, "failed")
            await self._after_run(session)
            return
        gate = StepGate(self.draining)
        task: asyncio.Task[object] = asyncio.create_task(
            self._run(session, gate), name=f"chronicle-run-{session}"
        )
        run = WorkerRun(lease, task, gate)
        self.runs[session] = run
        keeper = asyncio.create_task(self.keep_lease(run), name=f"chronicle-lease-{session}")
        drained = asyncio.create_task(gate.reached.wait())
        try:
            await asyncio.wait({task, drained}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                run.cancel("drained", DRAINED)
            await asyncio.wait({task})
        finally:
            keeper.cancel()
            drained.cancel()
            del self.runs[session]
        ending = await self._ending(run)
        if ending != "lease_lost":
            await self._release(lease, ending)
        if ending in ("ended", "failed"):
            await self._after_run(session)

    async def _after_run(self, session: UUID) -> None:
        """The caller's ``after_run`` for a session whose run ended (its lease released), in
        a task of its own that the drain's deadline or ``abort`` cancels as it cancels runs
        (what it left undone, e.g. an evaluation trial's scoring, a worker's sweep does)."""
        if self.after_run is None:
            return
        hook: asyncio.Future[None] = asyncio.ensure_future(self.after_run(session))
        self._hooks.add(hook)
        try:
            await hook
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if this is not None and this.cancelling():
                raise
            log.warning("worker %s: stopped the after-run work of %s", self.worker_id, session)
        except Exception:
            log.exception("worker %s: after the run of %s", self.worker_id, session)
        finally:
            self._hooks.discard(hook)

    def _stop_all(self, reason: str) -> None:
        """Cancel every run (handed back) and every after-run hook."""
        for run in self.runs.values():
            run.cancel("drained", reason)
        for hook in self._hooks:
            hook.cancel(reason)

    async def _run(self, session: UUID, gate: StepGate) -> object:
        """The session run as recorded (a user's pause or stop stays in force); a replay or a
        fork the API recorded is run as one (``worker_runs``)."""
        try:
            recorded = recorded_config(await self.store.read(session, limit=5))
        except SessionError:
            recorded = SessionConfig()
        options = SessionOptions(
            api_key=self.settings.llm.api_key,
            stuck_detection=recorded.given("stuck_detection", True) is not False,
            continue_paused=False,
        )
        return await run_claimed(
            self.store, self.settings, session, options, before_model_call=gate
        )

    async def _ending(self, run: WorkerRun) -> RunEnding:
        task = run.task
        if task.cancelled():
            return run.cancelled_because or "drained"
        problem = task.exception()
        if problem is None:
            return "ended"
        if isinstance(problem, RunningElsewhereError):
            log.info("session %s runs in another process; trying later", run.lease.session_id)
            return "busy"
        if isinstance(problem, DatabaseGoneError):
            return "database_gone"
        if isinstance(problem, NoCapacityError):  # a full host pool: as a refusal, later
            log.warning("session %s: %s; trying again later", run.lease.session_id, problem)
            return "refused"
        refusal = refused_for_now(problem)
        if refusal is not None:
            log.warning(
                "session %s: %s (%s: %s)",
                run.lease.session_id, refusal, refusal.sqlstate, refusal.server_message,
            )  # fmt: skip
            return "refused"
        log.warning("session %s failed: %s", run.lease.session_id, problem, exc_info=problem)
        recorded = await self._record_error(
            run.lease.session_id,
            f"the worker could not run the session: {getattr(problem, 'message', None) or problem}",
        )
        return "failed" if recorded else "refused"

    async def keep_lease(self, run: WorkerRun) -> None:
        """Renew the lease every heartbeat; a refusal (taken over) or a lease that ran out
        while renewals failed ends the run, since another worker may be running it now."""
        duration = self.settings.worker.lease_duration
        loop = asyncio.get_running_loop()
        renewed_at = loop.time()
        while True:
            await asyncio.sleep(self.settings.worker.heartbeat_interval)
            try:
                async with asyncio.timeout(self.settings.worker.heartbeat_interval):
                    held = await leases.heartbeat(self.store, run.lease, duration)
            except Exception as exc:
                log.warning("cannot renew the lease on %s: %s", run.lease.session_id, exc)
                if loop.time() - renewed_at < duration:
                    continue
                held = False
            if not held:
                log.warning("worker %s lost session %s", self.worker_id, run.lease.session_id)
                run.cancel("lease_lost", LEASE_LOST)
                return
            renewed_at = loop.time()

    async def _release(self, lease: Lease, ending: RunEnding) -> None:
        refusals = self._refusals.pop(lease.session_id, 0) + 1  # in a row: others reset it
        if ending == "refused":
            self._refusals[lease.session_id] = refusals
        settings = self.settings
        outcome, retry_after = release_plan(
            ending,
            busy_retry_after=settings.worker.heartbeat_interval,
            refused_retry_after=refused_backoff(
                refusals, settings.worker.refused_backoff, settings.worker.refused_backoff_max
            ),
        )
        try:
            async with asyncio.timeout(10):
                result = await leases.release(self.store, lease, outcome, retry_after=retry_after)
        except Exception as exc:  # the lease expires instead
            log.warning("cannot release the lease on %s: %s", lease.session_id, exc)
            return
        log.info("session %s: %s, lease %s (%s)", lease.session_id, ending, outcome, result)

    async def _record_error(self, session: UUID, reason: str) -> bool:
        """Say in the session's log why its run ended; False when the database refused it
        for now (the run is kept, to say it once the log can be written)."""
        try:
            async with asyncio.timeout(10):
                await self.store.append(
                    session, [AgentState(state="error", reason=reason, source="agent")]
                )
        except Exception as exc:
            if refused_for_now(exc) is not None:
                log.warning("session %s: its error cannot be recorded yet: %s", session, exc)
                return False
            log.warning("session %s: its error was not recorded: %s", session, exc)
        return True

    # -- around the runs -------------------------------------------------------------------

    async def _presence(self) -> None:
        """This worker's row in ``workers``, refreshed every heartbeat."""
        host, pid = socket.gethostname(), os.getpid()
        while True:
            try:
                await leases.worker_seen(
                    self.store,
                    worker_id=self.worker_id,
                    host=host,
                    pid=pid,
                    role=ROLE,
                    running=len(self.runs),
                    capacity=0 if self.draining.is_set() else self.max_sessions,
                    forget_after=max(10 * self.settings.worker.lease_duration, 600.0),
                )
            except Exception as exc:
                log.warning("worker %s cannot record its presence: %s", self.worker_id, exc)
            await asyncio.sleep(self.settings.worker.heartbeat_interval)

    async def _sweeper(self) -> None:
        """The caller's ``sweep`` on a timer, while the worker claims sessions."""
        if self.sweep is None:
            return
        while not self.draining.is_set():
            await asyncio.sleep(self.settings.worker.sweep_interval)
            try:
                await self.sweep()
            except Exception:
                log.exception("worker %s: the sweep failed", self.worker_id)

    async def _reaper(self) -> None:
        """Every kind's reaper (the sandboxes whose owner died), side by side."""
        settings = self.settings
        config = settings.runtime_config()
        await asyncio.gather(
            *(
                kind.reap_forever(
                    config, settings.sandbox_reap_after, settings.worker.reap_interval
                )
                for kind in KINDS.values()
                if kind.reap_forever is not None
            )
        )


async def run_worker(
    store: EventStore,
    settings: Settings,
    *,
    stop: asyncio.Event,
    worker_id: str | None = None,
    max_sessions: int | None = None,
    abort: asyncio.Event | None = None,
    after_run: AfterRun | None = None,
    sweep: Sweep | None = None,
) -> None:
    """Run sessions that must run until ``stop`` is set, then drain (see the module) and
    return; ``abort`` (a second signal) cuts the drain short. ``max_sessions`` defaults to
    ``worker_max_sessions``; ``after_run`` is called after each run that ended, ``sweep``
    every ``worker_sweep_interval`` seconds."""
    worker = Worker(
        store,
        settings,
        worker_id or new_worker_id(),
        max_sessions if max_sessions is not None else settings.worker.max_sessions,
        after_run,
        sweep,
    )
    log.info("worker %s started", worker.worker_id)
    await worker.serve(stop, abort or asyncio.Event())
    log.info("worker %s stopped", worker.worker_id)
