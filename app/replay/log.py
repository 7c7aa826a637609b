"""The replay's log: a ``BufferedSession`` that answers each replayed action the moment it is
appended, from the recording (a wrapper: it appends through the buffer and answers every
other call with it).

A live session's actions are answered by action workers (``app/store/action_worker.py``),
each a task subscribed to the session: a step woke the worker for its action, the worker
read the replay's log, appended the answer, and woke the controller again (one task and three
wake-ups a step, ~20% of a replay's CPU). A replay's answers need no sandbox and no waiting,
so the append that records an action records its answer right after it, as the worker would
have (``RecordedAnswers``: the recorded observation, or a divergence). The append returns the
events it was given only; the controller takes the answer in from its subscription, as it
takes a worker's. A recorded observation is appended as the recording stores it where that
is byte for byte what rebuilding it as an event would store (``served.py``), and rebuilt
otherwise.

When an action cannot be answered (it differs from the recording, or the recording holds no
answer), the append records an ``error`` answer saying so, as a worker does, and raises
``WorkerStopped``: the run then ends in ``error`` with that reason, as when a live session's
worker stops (``app/agent/driving.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

from app.events import HANDLED_KINDS, Action, ErrorObservation, Observation
from app.replay.answers import RecordedAnswers, rebuilt_observation
from app.replay.served import served_observation
from app.store import (
    BufferedSession,
    EventLike,
    EventStore,
    Position,
    RecordedEvent,
    ServiceFailed,
    SessionSubscription,
    WorkerStopped,
    unrecordable_answer,
)

log = logging.getLogger(__name__)

#: Seconds a replay runs at most without letting the event loop run its other work.
YIELD_EVERY = 0.005


class AnsweringLog:
    """A ``BufferedSession`` of ``session_id`` over ``store`` whose appends of the replay
    session's actions also append their recorded answers (see the module); ``answer_with``
    sets who answers which kinds. ``options`` are the buffer's (``BufferedSession``)."""

    def __init__(
        self,
        store: EventStore,
        session_id: UUID,
        *,
        existing: Sequence[RecordedEvent] = (),
        **options: Any,
    ) -> None:
        self.buffer = BufferedSession(store, session_id, existing=existing, **options)
        self.store = store
        self.session_id = session_id
        self.config = store.config
        self.masker = store.masker
        self._answers: dict[str, RecordedAnswers] | None = None
        self._yielded = 0.0  # when the loop last ran something else (``time.monotonic``)

    # -- the buffer's, as they are ---------------------------------------------------------

    async def read(
        self,
        session_id: UUID,
        after_seq: int = 0,
        limit: int | None = None,
        *,
        resolve_blobs: bool = True,
    ) -> list[RecordedEvent]:
        return await self.buffer.read(session_id, after_seq, limit, resolve_blobs=resolve_blobs)

    def subscribe(
        self, session_id: UUID, after_seq: int = 0, *, resolve_blobs: bool = True
    ) -> SessionSubscription:
        return self.buffer.subscribe(session_id, after_seq, resolve_blobs=resolve_blobs)

    async def load_checkpoint(self, name: str) -> Position | None:
        return await self.buffer.load_checkpoint(name)

    async def save_checkpoint(self, name: str, position: Position) -> None:
        await self.buffer.save_checkpoint(name, position)

    async def last_seq(self, session_id: UUID) -> int:
        return await self.buffer.last_seq(session_id)

    async def put_messages(self, hashes: Sequence[str], texts: Sequence[str]) -> int:
        return await self.buffer.put_messages(hashes, texts)

    async def read_messages(self, hashes: Sequence[str]) -> dict[str, Any]:
        return await self.buffer.read_messages(hashes)

    async def flush(self) -> None:
        await self.buffer.flush()

    async def close(self) -> None:
        await self.buffer.close()

    def _mine(self, session_id: UUID) -> bool:
        return session_id == self.session_id

    # -- appends that answer ---------------------------------------------------------------

    def answer_with(self, handlers: Iterable[RecordedAnswers]) -> None:
        """Answer the action kinds of each handler's service with it from now on."""
        self._answers = {kind: h for h in handlers for kind in HANDLED_KINDS[h.service]}

    async def append(
        self,
        session_id: UUID,
        events: Iterable[EventLike],
        *,
        expected_seq: int | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> list[RecordedEvent]:
        recorded = await self.buffer.append(
            session_id, events, expected_seq=expected_seq, messages=messages
        )
        answers = self._answers
        if answers and self._mine(session_id):
            answered = False
            for event in recorded:
                handler = answers.get(event.kind)
                if handler is not None:
                    await self._answer(handler, event)
                    answered = True
            if answered:
                await self._let_others_run()
        return recorded

    async def _let_others_run(self) -> None:
        """A replay's steps may now run without waiting for anything: every ``YIELD_EVERY``
        seconds, let the loop run what is due (the timed flush, the claim's renewal, other
        tasks of the process)."""
        now = time.monotonic()
        if now - self._yielded >= YIELD_EVERY:
            self._yielded = now
            await asyncio.sleep(0)

    async def _answer(self, handler: RecordedAnswers, event: RecordedEvent) -> None:
        """One action's one answer, as an action worker records it."""
        try:
            action = event.event()
        except Exception as exc:  # a stored action this code cannot read
            observation: Observation = _failure(handler, event, f"it could not be read: {exc}")
        else:
            if not isinstance(action, Action):
                return
            try:
                answer = await handler.recorded_answer(action)
                if await self._serve(answer, event):
                    return
                observation = rebuilt_observation(answer)
            except ServiceFailed as exc:
                await self._record(
                    event, ErrorObservation(message=str(exc), error_type="unavailable")
                )
                raise WorkerStopped(str(exc)) from exc
            except Exception as exc:  # a bug in one answer must not end the replay
                log.exception("%s failed on %s %s", handler.title, event.kind, event.seq)
                observation = _failure(handler, event, f"{type(exc).__name__}: {exc}")
        await self._record(event, observation)

    async def _serve(self, answer: RecordedEvent, event: RecordedEvent) -> bool:
        """Append the recorded ``answer`` to ``event`` as the recording stores it (``served``);
        False when it must be rebuilt as an event instead."""
        config = self.config
        batch = served_observation(
            answer,
            event.seq,
            masker=self.masker or None,
            max_event_bytes=config.max_event_bytes,
            blob_threshold=config.blob_threshold_bytes,
        )
        if batch is None:
            return False
        await self.buffer.append_encoded(self.session_id, batch)
        return True

    async def _record(self, event: RecordedEvent, observation: Observation) -> None:
        """``observation`` as the answer to ``event``, or an error saying why it cannot be."""
        try:
            await self.append(
                self.session_id, [observation.model_copy(update={"cause": event.seq})]
            )
            return
        except WorkerStopped:
            raise
        except Exception as exc:  # refused (invalid, too large)
            problem = exc
        log.warning("the answer to %s %s was refused: %s", event.kind, event.seq, problem)
        fallback = unrecordable_answer(event, observation, problem)
        try:
            await self.append(self.session_id, [fallback])
        except Exception as exc:
            raise WorkerStopped(f"the replay cannot record answers in the log: {exc}") from exc


def _failure(handler: RecordedAnswers, event: RecordedEvent, why: str) -> ErrorObservation:
    return ErrorObservation(
        message=f"the {handler.title} could not run this {event.kind} action: {why}",
        error_type="internal",
    )
