"""``MemoryLog``: a ``SessionLog`` in plain Python memory, with the store's rules.

For code that needs a session's log but not a database: unit tests of the loop, trying an
agent without PostgreSQL, and the store contract (tests/contract/store/), which holds it to
the answers ``EventStore`` gives. What a session's writer can see is the same: events are
validated, masked and size-checked by the same ``encode_batch``, seqs are gapless,
``expected_seq`` is checked, a re-sent batch returns what was recorded, causes must name an
earlier event and an action gets one observation, and each event is hashed into the
session's chain as the database hashes it. Nothing is durable and nothing is shared with
another process; ``global_position`` is the order of appends in this log (``tx`` the same).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Self
from uuid import UUID

from app.events import ACTION_KINDS, OBSERVATION_KINDS
from app.events.chain import link
from app.events.masking import SecretMasker
from app.store.append import EncodedBatch, EventLike, encode_batch
from app.store.config import StoreConfig
from app.store.errors import ConcurrencyError, DuplicateEventError, InvalidEventError
from app.store.records import Position, RecordedEvent


class MemoryLog:
    """Sessions' logs in memory (see the module); a ``SessionLog``."""

    def __init__(
        self, *, config: StoreConfig | None = None, masker: SecretMasker | None = None
    ) -> None:
        self.config = config or StoreConfig()
        self.masker = masker or SecretMasker()
        self._sessions: dict[UUID, list[RecordedEvent]] = {}
        self._where: dict[UUID, tuple[UUID, int]] = {}  # event_id -> (session, seq)
        self._answered: dict[UUID, set[int]] = {}  # session -> causes of its observations
        self._messages: dict[str, str] = {}
        self._checkpoints: dict[str, Position] = {}
        self._position = 0
        self.closed = False
        self._appended = asyncio.Event()  # replaced after each ring: waiters hold the old one

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """End its subscriptions (nothing else to release)."""
        self.closed = True
        self._ring()

    def _ring(self) -> None:
        self._appended.set()
        self._appended = asyncio.Event()

    # -- writing ---------------------------------------------------------------------------

    async def append(
        self,
        session_id: UUID,
        events: Iterable[EventLike],
        *,
        expected_seq: int | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> list[RecordedEvent]:
        batch = encode_batch(
            events,
            self.config.max_event_bytes,
            self.masker,
            blob_threshold=self.config.blob_threshold_bytes,
        )
        if not batch.event_ids:
            return []
        log = self._sessions.get(session_id, [])
        already = self._already_recorded(session_id, batch.event_ids)
        if already is not None:
            return already
        last = len(log)
        if expected_seq is not None and expected_seq != last:
            raise ConcurrencyError(session_id, expected_seq, last)
        self._check_order(session_id, log, batch)
        recorded = self._recorded(session_id, log, batch)
        self._messages.update(messages or {})
        self._sessions[session_id] = log + recorded
        answered = self._answered.setdefault(session_id, set())
        for event in recorded:
            self._where[event.event_id] = (session_id, event.seq)
            if event.kind in OBSERVATION_KINDS and event.cause is not None:
                answered.add(event.cause)
        self._ring()
        return recorded

    def _already_recorded(
        self, session_id: UUID, event_ids: list[UUID]
    ) -> list[RecordedEvent] | None:
        """The recorded events if this exact batch is already in the session (as
        ``EventStore`` answers a re-sent batch), else None."""
        found = [self._where[event_id] for event_id in event_ids if event_id in self._where]
        if not found:
            return None
        elsewhere = [(session, seq) for session, seq in found if session != session_id]
        if elsewhere:
            session, seq = elsewhere[0]
            event_id = self._sessions[session][seq - 1].event_id
            raise DuplicateEventError(
                f"event_id {event_id} is already recorded in session {session}"
            )
        if len(found) != len(event_ids):
            raise DuplicateEventError(
                f"{len(found)} of the batch's {len(event_ids)} event_ids are already recorded: "
                "a batch must be re-sent whole, or with new event_ids"
            )
        log = self._sessions[session_id]
        return [log[seq - 1] for _, seq in sorted(found, key=lambda where: where[1])]

    def _check_order(self, session_id: UUID, log: list[RecordedEvent], batch: EncodedBatch) -> None:
        """What the database's append checks beyond the events themselves: one
        ``session.created``, causes that name an earlier event of the session, an action (or
        a model call an error answers) for an observation, and one observation per action."""
        kinds = [event.kind for event in log] + batch.kinds
        if kinds.count("session.created") > 1:
            raise InvalidEventError(
                f"session {session_id} already has its session.created event; a session is "
                "created once (start a new session for a new configuration)",
                kind="session.created",
            )
        answered = set(self._answered.get(session_id, ()))
        for index, (kind, cause) in enumerate(zip(batch.kinds, batch.causes, strict=True)):
            if cause is None:
                continue
            seq = len(log) + index + 1
            if not 1 <= cause < seq:
                raise InvalidEventError(
                    f"cause must be the seq of an earlier event of session {session_id}",
                    field="cause",
                )
            if kind not in OBSERVATION_KINDS:
                continue
            answers = kinds[cause - 1]
            if answers not in ACTION_KINDS and not (kind == "error" and answers == "llm.call"):
                raise InvalidEventError(
                    f"a {kind} event must answer an action of its session, but its cause "
                    f"(seq {cause}) is a {answers} event (session {session_id}); an "
                    "observation's cause is the seq of the action it answers",
                    field="cause",
                )
            if cause in answered:
                raise DuplicateEventError(
                    f"an action in session {session_id} already has its observation (cause {cause})"
                )
            answered.add(cause)

    def _recorded(
        self, session_id: UUID, log: list[RecordedEvent], batch: EncodedBatch
    ) -> list[RecordedEvent]:
        head = log[-1].hash if log else b""
        now = datetime.now(UTC)
        recorded = []
        for index, event_id in enumerate(batch.event_ids):
            self._position += 1
            event = RecordedEvent(
                global_position=self._position,
                session_id=session_id,
                seq=len(log) + index + 1,
                event_id=event_id,
                tx=self._position,
                kind=batch.kinds[index],
                source=batch.sources[index],
                cause=batch.causes[index],
                payload=batch.payloads[index],
                schema_version=batch.versions[index],
                created_at=now,
                hash=b"",
            )
            head = link(head, **event.hashed_fields())
            recorded.append(event._replace(hash=head))
        return recorded

    # -- reading ---------------------------------------------------------------------------

    async def read(
        self,
        session_id: UUID,
        after_seq: int = 0,
        limit: int | None = None,
        *,
        resolve_blobs: bool = True,
    ) -> list[RecordedEvent]:
        """As ``EventStore.read``: whole payloads, or as stored with ``resolve_blobs=False``."""
        log = self._sessions.get(session_id, [])
        start = max(after_seq, 0)
        page = log[start : None if limit is None else start + limit]
        if not resolve_blobs:
            page = [event._replace(payload=event.stored_payload) for event in page]
        return page

    async def last_seq(self, session_id: UUID) -> int:
        return len(self._sessions.get(session_id, ()))

    def subscribe(self, session_id: UUID, after_seq: int = 0) -> MemorySubscription:
        return MemorySubscription(self, session_id, after_seq)

    # -- checkpoints -----------------------------------------------------------------------

    async def load_checkpoint(self, name: str) -> Position | None:
        return self._checkpoints.get(name)

    async def save_checkpoint(self, name: str, position: Position) -> None:
        self._checkpoints[name] = position


class MemorySubscription:
    """A ``SessionStream`` over a ``MemoryLog``: a cursor, and a wait for the next append."""

    def __init__(self, log: MemoryLog, session_id: UUID, after_seq: int) -> None:
        self._log = log
        self._session_id = session_id
        self._seq = after_seq
        self._closed = False

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> RecordedEvent:
        while not (self._closed or self._log.closed):
            appended = self._log._appended  # before looking: an append after it rings it
            events = self._log._sessions.get(self._session_id, ())
            if len(events) > self._seq:
                event = events[self._seq]
                self._seq = event.seq
                return event
            await appended.wait()
        raise StopAsyncIteration

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        self._log._ring()
