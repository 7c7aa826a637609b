"""Driving a controller with the action workers beside it.

The executor and the MCP tool service answer a session's actions as action workers
(app/store/action_worker.py); a replay puts workers that answer from the recording in their
place. A worker runs until cancelled; one that stops on its own (its sandbox died past the
restart budget, the log refuses its answers, a replayed action has no recorded answer) would
leave the controller waiting for answers that never come, so the run ends at once in
``error``, recorded as an ``agent.state`` that says why. A worker the database refused for
now (its disk full: ``app.store.transient``) ends the run with that refusal instead: the
session is not in error, its run is tried again later. A worker interrupted by the loss of
its sandbox's host (``WorkerInterrupted``) ends the run with no ``agent.state`` at all: like
a run whose worker died, the session is then ``interrupted`` (working, and nobody runs it),
the log's ``runtime.failed`` says why, and a resume goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Mapping
from typing import Any
from uuid import UUID

from app.agent.controller import AgentController, Outcome
from app.events import AgentState
from app.store import SessionLog, WorkerInterrupted, refused_for_now

log = logging.getLogger(__name__)


def _why_stopped(name: str, task: asyncio.Task[Any]) -> str:
    problem = task.exception() if not task.cancelled() else None
    if problem is None:
        return f"the {name} stopped"
    return str(problem) or f"the {name} failed ({type(problem).__name__})"


async def drive(
    store: SessionLog,
    session_id: UUID,
    controller: AgentController,
    workers: Mapping[str, Coroutine[Any, Any, Any]],
) -> Outcome:
    """Run the controller with ``workers`` (by name) beside it until it returns an outcome;
    ``"error"`` as soon as a worker stops. The workers are cancelled either way."""
    tasks = {
        asyncio.create_task(worker, name=f"chronicle-{name}"): name
        for name, worker in workers.items()
    }
    control = asyncio.create_task(controller.run(), name="chronicle-controller")
    try:
        done, _ = await asyncio.wait({control, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        if control in done:
            return control.result()
        stopped = next(task for task in tasks if task in done)
        refusal = None if stopped.cancelled() else refused_for_now(stopped.exception())
        if refusal is not None:
            raise refusal
        reason = _why_stopped(tasks[stopped], stopped)
        control.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await control
        if not stopped.cancelled() and isinstance(stopped.exception(), WorkerInterrupted):
            log.warning("session %s: %s; the run is interrupted", session_id, reason)
            return "stopped"
        log.error("session %s: %s; the run ends", session_id, reason)
        await store.append(session_id, [AgentState(state="error", reason=reason, source="agent")])
        return "error"
    finally:
        for task in (control, *tasks):
            task.cancel()
        await asyncio.gather(control, *tasks, return_exceptions=True)
