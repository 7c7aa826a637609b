"""The action worker: one log-driven loop that answers a service's actions, each exactly once.

The executor (sandbox actions) and the MCP tool service (``mcp.call``) are each an
``ActionWorker`` around a handler that knows how to run one action. The worker owns the
guarantees, so both services have the same ones:

- It subscribes to the session and takes the kinds its service handles (``handled_by`` on the
  event classes, collected in ``HANDLED_KINDS``).
- Before running an action it saves its checkpoint ("started up to here"); the observation it
  then appends, with ``cause`` = the action's seq, marks the action done.
- On start it recovers: an action that was started but never answered is answered with an
  ``error`` saying it was interrupted and may have partly run; it is never run twice.
  Actions appended while no worker ran were never started, and simply run.
- Every action gets exactly one observation. A handler's unexpected exception answers that
  one action with an ``error``; an answer the store refuses (invalid, too large, a database
  error) is replaced by an ``error`` saying so; if even that cannot be recorded, the worker
  logs it and stops with ``WorkerStopped``, which whoever runs it (the session runner) sees.
  A handler whose service can serve no more raises ``ServiceFailed``: the action at hand is
  answered with its reason, and the worker stops the same way.

It lives in ``store`` because it needs nothing but the log: both ``runtime`` and ``tools`` may
use it, and neither may import the other.
"""

from __future__ import annotations

import logging
from typing import NoReturn, Protocol
from uuid import UUID

from app.errors import ChronicleError
from app.events import (
    HANDLED_KINDS,
    OBSERVATION_KINDS,
    Action,
    ErrorObservation,
    Observation,
    Service,
)
from app.store.errors import DuplicateEventError
from app.store.records import Position, RecordedEvent
from app.store.session_log import SessionLog

log = logging.getLogger(__name__)


def unrecordable_answer(
    action: RecordedEvent, observation: Observation, problem: BaseException
) -> ErrorObservation:
    """What answers an action whose observation the log refused (invalid, too large): the
    action still gets an answer, and the agent learns why."""
    return ErrorObservation(
        message=f"the result of this {action.kind} action ({observation.kind}) could not "
        f"be recorded: {problem}",
        error_type="unrecordable",
        cause=action.seq,
    )


class ServiceFailed(ChronicleError):
    """Raised by a handler whose service can run no more actions; the message says why, in
    words for the user and the agent."""


class ServiceInterrupted(ServiceFailed):
    """Raised by a handler whose service lost where it runs (a sandbox's host went away):
    the session is interrupted, not failed, and a resume runs it again elsewhere."""


class WorkerStopped(ChronicleError):
    """An action worker stopped before it was cancelled; the message says why."""


class WorkerInterrupted(WorkerStopped):
    """An action worker stopped because its service was interrupted (``ServiceInterrupted``)."""


class ActionHandler(Protocol):
    """What a service plugs into an ``ActionWorker``: how to run one action."""

    #: The service whose action kinds it answers (``Event.handled_by``).
    service: Service
    #: Names the worker's checkpoint: ``<name>:<session id>``.
    name: str
    #: Names the service in messages ("the executor", "the MCP tool service").
    title: str

    async def handle(self, action: Action) -> Observation:
        """Run ``action`` and describe the outcome; its ``cause`` is set by the worker.

        Failures of the action itself are observations (``ErrorObservation``); raise
        ``ServiceFailed`` only when the service cannot run anything any more.
        """
        ...


def worker_checkpoint(name: str, session_id: UUID) -> str:
    """The checkpoint an action worker saves before each action it runs."""
    return f"{name}:{session_id}"


class ActionWorker:
    """Answers the session's actions of ``handler.service`` until cancelled (see the module)."""

    def __init__(self, store: SessionLog, session_id: UUID, handler: ActionHandler) -> None:
        self.store = store
        self.session_id = session_id
        self.handler = handler
        self.kinds = HANDLED_KINDS[handler.service]
        self.checkpoint = worker_checkpoint(handler.name, session_id)

    async def run(self) -> NoReturn:
        """Recover, then serve the session; returns only by raising ``WorkerStopped`` (or
        the store's error when the log cannot be read)."""
        last_seq = await self.recover()
        async with self.store.subscribe(self.session_id, after_seq=last_seq) as stream:
            async for event in stream:
                if event.kind in self.kinds:
                    await self._run(event)
        raise WorkerStopped(f"the {self.handler.title}'s subscription to the session ended")

    async def recover(self) -> int:
        """Answer interrupted actions, run never-started ones; the last seq looked at."""
        events = await self.store.read(self.session_id)
        answered = {e.cause for e in events if e.kind in OBSERVATION_KINDS and e.cause}
        started = await self.store.load_checkpoint(self.checkpoint)
        for event in events:
            if event.kind not in self.kinds or event.seq in answered:
                continue
            if started is not None and event.global_position <= started.global_position:
                await self._answer(event, self._interrupted(event))
            else:
                await self._run(event)
        return events[-1].seq if events else 0

    def _interrupted(self, event: RecordedEvent) -> ErrorObservation:
        return ErrorObservation(
            message=(
                f"this {event.kind} action was interrupted: the {self.handler.title} stopped "
                "while it ran, so it may have partly run. It was not run again; check its "
                "effects before repeating it."
            ),
            error_type="interrupted",
        )

    async def _run(self, event: RecordedEvent) -> None:
        """Checkpoint, run, answer: one action."""
        try:
            action = event.event()
        except Exception as exc:  # a stored action this code cannot read (say, a newer schema)
            await self._answer(event, self._failure(event, f"it could not be read: {exc}"))
            return
        if not isinstance(action, Action):
            return
        try:
            await self.store.save_checkpoint(
                self.checkpoint, Position(event.tx, event.global_position)
            )
        except Exception as exc:
            # Running it unrecorded could run it twice after a crash: stop instead.
            log.error("%s cannot save its checkpoint: %s", self.handler.title, exc)
            raise WorkerStopped(
                f"the {self.handler.title} cannot save its checkpoint in the log: {exc}"
            ) from exc
        try:
            observation = await self.handler.handle(action)
        except ServiceFailed as exc:
            await self._answer(event, ErrorObservation(message=str(exc), error_type="unavailable"))
            stopped = WorkerInterrupted if isinstance(exc, ServiceInterrupted) else WorkerStopped
            raise stopped(str(exc)) from exc
        except Exception as exc:  # a bug in one action's handling must not end the service
            log.exception("%s failed on %s %s", self.handler.title, event.kind, event.seq)
            observation = self._failure(event, f"{type(exc).__name__}: {exc}")
        await self._answer(event, observation)

    def _failure(self, event: RecordedEvent, why: str) -> ErrorObservation:
        return ErrorObservation(
            message=f"the {self.handler.title} could not run this {event.kind} action: {why}",
            error_type="internal",
        )

    async def _answer(self, event: RecordedEvent, observation: Observation) -> None:
        """Record ``observation`` as the action's one answer, or an error saying why it could
        not be; ``WorkerStopped`` when not even that can be recorded."""
        try:
            await self.store.append(
                self.session_id, [observation.model_copy(update={"cause": event.seq})]
            )
            return
        except DuplicateEventError:
            log.info("action %s of %s already has an observation", event.seq, self.session_id)
            return
        except Exception as exc:  # refused (invalid, too large) or the database failed
            problem = exc
        log.warning("the answer to %s %s was refused: %s", event.kind, event.seq, problem)
        fallback = unrecordable_answer(event, observation, problem)
        try:
            await self.store.append(self.session_id, [fallback])
        except DuplicateEventError:
            return
        except Exception as exc:
            log.error("%s cannot record answers, stopping: %s", self.handler.title, exc)
            raise WorkerStopped(
                f"the {self.handler.title} cannot record answers in the log: {exc}"
            ) from exc
