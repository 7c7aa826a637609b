"""One session's log kept in memory while its only writer runs, and written in batches.

A replay runs the live controller and action workers against a recording; they talk through
the log, and each step appends, reads and waits for what the others appended. Against
PostgreSQL that is several round trips a step, which kept a replay at the live loop's speed
although nothing waits for a model or a sandbox. ``BufferedSession`` is a store whose one
session lives in memory: an append gets its seqs at once and is handed to that session's
subscribers in this process (as the store hands on this process's own appends), reads are
answered from memory, and the events go to the store in order: ``flush_every`` at a time,
``flush_after`` seconds after an event came in at the latest (a reader of the session, such
as the session list, sees it at most that far behind), and when ``flush`` is called, each
batch checked against the seq the last one ended at. The
events then hash and ``verify`` as if they had been appended one by one; ``created_at`` is
the time of the write. Its writer must be the session's only one (a replay holds the
session's claim). Prompt messages are kept until the next flush too, and checkpoints of the
session's consumers stay in memory; everything else goes to the store. Of the written
events only the last ``KEEP_WRITTEN`` stay in memory (the readers of a running session read
after what they have, which is recent); a read from further back is answered by the store,
so memory does not grow with the session.

The events handed out before a flush have no hash yet (``b""``) and ``global_position`` =
``seq`` (``tx`` 0); they are the store's once flushed (read them back for those columns).

It wraps the store rather than extending it: it is a ``SessionLog`` (what the controller, the
workers and replay use) plus the few store calls a replay makes (prompt messages, the last
seq), each answered from memory for its session and passed to the store for any other. A
replay's ``AnsweringLog`` (app/replay/log.py) wraps it in turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg

from app.store.append import EncodedBatch, EventLike, encode_batch
from app.store.errors import ConcurrencyError
from app.store.event_store import EventStore
from app.store.records import Position, RecordedEvent
from app.store.subscriptions import PAGE_SIZE, SessionSubscription
from app.store.tail_reads import TailPage

#: Events written to the store per batch (and kept unwritten at most).
FLUSH_EVENTS = 2000
#: Seconds an event may wait unwritten.
FLUSH_AFTER = 0.2
#: Written events kept in memory for reads (the last ones); older ones are read from the store.
KEEP_WRITTEN = 512


class BufferedSession:
    """``store``, with ``session_id`` kept in memory and written in batches (see the module).

    The session must not exist yet (its events start at seq 1), or hold only ``existing``,
    its events as read from the store (a replay recorded by the API, run by a worker).
    """

    def __init__(
        self,
        store: EventStore,
        session_id: UUID,
        *,
        flush_every: int = FLUSH_EVENTS,
        flush_after: float = FLUSH_AFTER,
        keep_written: int = KEEP_WRITTEN,
        existing: Sequence[RecordedEvent] = (),
    ) -> None:
        self.store = store
        self.config = store.config
        self.masker = store.masker
        #: the store's: this session's subscriptions here are rung by its appends here
        self.notifier = store.notifier
        self.session_id = session_id
        self.flush_every = flush_every
        self.flush_after = flush_after
        self.keep_written = keep_written
        self._timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()
        #: the session's last events (those unwritten, and up to KEEP_WRITTEN written ones)
        self._events: list[RecordedEvent] = list(existing)
        self._first = 1  # seq of self._events[0]
        self._last = len(self._events)  # seq of the session's last event
        self._unwritten: list[EncodedBatch] = []  # as encoded when appended
        self._unwritten_count = 0
        self._written = self._last  # seq of the last event in the store
        self._messages: dict[str, str] = {}  # prompt messages not in the store yet
        self._checkpoints: dict[str, Position] = {}
        self._flushing = asyncio.Lock()  # the controller and the workers append side by side

    def _mine(self, session_id: UUID) -> bool:
        return session_id == self.session_id

    async def append(
        self,
        session_id: UUID,
        events: Iterable[EventLike],
        *,
        expected_seq: int | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> list[RecordedEvent]:
        if not self._mine(session_id):
            return await self.store.append(
                session_id, events, expected_seq=expected_seq, messages=messages
            )
        batch = encode_batch(  # validated and masked as the store would: what it will hold
            events,
            self.config.max_event_bytes,
            self.masker,
            blob_threshold=self.config.blob_threshold_bytes,
        )
        return await self.append_encoded(
            session_id, batch, expected_seq=expected_seq, messages=messages
        )

    async def append_encoded(
        self,
        session_id: UUID,
        batch: EncodedBatch,
        *,
        expected_seq: int | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> list[RecordedEvent]:
        """``append`` of events already validated, masked and encoded (by ``encode_batch``,
        or as a wrapper vouches for them: see ``app/replay/log.py``)."""
        if not self._mine(session_id):
            return await self.store.append_encoded(
                session_id, batch, expected_seq=expected_seq, messages=messages
            )
        if not batch.event_ids:
            return []
        last = self._last
        if expected_seq is not None and expected_seq != last:
            raise ConcurrencyError(session_id, expected_seq, last)
        now = datetime.now(UTC)
        recorded = [
            RecordedEvent(
                global_position=last + i,
                session_id=session_id,
                seq=last + i,
                event_id=batch.event_ids[i - 1],
                tx=0,
                kind=batch.kinds[i - 1],
                source=batch.sources[i - 1],
                cause=batch.causes[i - 1],
                payload=batch.payloads[i - 1],
                schema_version=batch.versions[i - 1],
                created_at=now,
                hash=b"",
            )
            for i in range(1, len(batch.event_ids) + 1)
        ]
        self._events += recorded
        self._last = recorded[-1].seq
        self._messages.update(messages or {})  # written before the events, as put_messages'
        self._unwritten.append(batch)
        self._unwritten_count += len(recorded)
        self.notifier.announce(str(session_id), recorded[-1].seq, recorded)
        if self._unwritten_count >= self.flush_every:
            await self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_after, self._due)
        return recorded

    def _due(self) -> None:
        """Write in the background what waited ``flush_after``; a failure is left for the
        next ``flush`` to meet again (nothing is dropped before it is written)."""
        self._timer = None
        task = asyncio.create_task(self.flush())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def flush(self) -> None:
        """Write what is not in the store yet: the prompt messages, then the events."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        async with self._flushing:
            if self._messages:  # dropped once written (a failed write is tried again)
                messages = dict(self._messages)
                await self.store.put_messages(list(messages), list(messages.values()))
                for key in messages:
                    del self._messages[key]
            # What came in until now: chasing the appends that come in while this writes
            # would make a write of a few events per step, as slow as no buffer at all.
            waiting = len(self._unwritten)
            while waiting:
                taken = _take(self._unwritten[:waiting], self.flush_every)
                batch = _joined(self._unwritten[:taken])
                await self.store.append_encoded(self.session_id, batch, expected_seq=self._written)
                self._written += len(batch.event_ids)
                self._unwritten_count -= len(batch.event_ids)
                del self._unwritten[:taken]
                waiting -= taken
            self._forget_written()

    def _forget_written(self) -> None:
        """Drop the written events but the last ``keep_written``: the store has them."""
        drop = min(self._written, self._last - self.keep_written) - self._first + 1
        if drop > 0:
            del self._events[:drop]
            self._first += drop

    async def read(
        self,
        session_id: UUID,
        after_seq: int = 0,
        limit: int | None = None,
        *,
        resolve_blobs: bool = True,
    ) -> list[RecordedEvent]:
        if not self._mine(session_id):
            return await self.store.read(session_id, after_seq, limit, resolve_blobs=resolve_blobs)
        page: list[RecordedEvent] = []
        after = after_seq
        while after < self._first - 1 and (limit is None or len(page) < limit):
            # before what memory holds: written, so the store has it
            wanted = self._first - 1 - after
            if limit is not None:
                wanted = min(wanted, limit - len(page))
            older = await self.store.read(session_id, after, wanted, resolve_blobs=resolve_blobs)
            if not older:
                break
            page += older
            after = older[-1].seq
        start = max(after - self._first + 1, 0)
        recent = self._events[start : None if limit is None else start + limit - len(page)]
        if not resolve_blobs:
            recent = [event._replace(payload=event.stored_payload) for event in recent]
        return page + recent

    async def read_tail(self, session_id: UUID, after_seq: int, *, resolve_blobs: bool) -> TailPage:
        """A page after ``after_seq``, for this session's subscriptions (``subscribe``)."""
        if not self._mine(session_id):
            return await self.store.read_tail(session_id, after_seq, resolve_blobs=resolve_blobs)
        events = await self.read(session_id, after_seq, PAGE_SIZE, resolve_blobs=resolve_blobs)
        return TailPage(events, len(events) < PAGE_SIZE)

    async def read_all(
        self, after: Position | None = None, limit: int = 1000, *, resolve_blobs: bool = True
    ) -> list[RecordedEvent]:
        """The store's (what is flushed): only a subscription's type asks for it."""
        return await self.store.read_all(after, limit, resolve_blobs=resolve_blobs)

    def subscribe(
        self, session_id: UUID, after_seq: int = 0, *, resolve_blobs: bool = True
    ) -> SessionSubscription:
        """Live tail of a session (as ``EventStore.subscribe``): this session's from memory,
        rung by its appends here; any other's from the store."""
        if not self._mine(session_id):
            return self.store.subscribe(session_id, after_seq, resolve_blobs=resolve_blobs)
        return SessionSubscription(
            self,
            session_id,
            after_seq,
            resolve_blobs=resolve_blobs,
            poll_interval=self.config.poll_interval,
        )

    def held(self) -> int:
        """How many of the session's events are in memory."""
        return len(self._events)

    async def last_seq(self, session_id: UUID) -> int:
        if not self._mine(session_id):
            return await self.store.last_seq(session_id)
        return self._last

    async def put_messages(self, hashes: Sequence[str], texts: Sequence[str]) -> int:
        self._messages.update(zip(hashes, texts, strict=True))
        return len(hashes)

    async def read_messages(self, hashes: Sequence[str]) -> dict[str, Any]:
        await self.flush()  # rare (a difference to show): read them as stored
        return await self.store.read_messages(hashes)

    def _its_consumer(self, name: str) -> bool:
        return name.endswith(f":{self.session_id}")

    async def load_checkpoint(self, name: str) -> Position | None:
        if self._its_consumer(name):
            return self._checkpoints.get(name)
        return await self.store.load_checkpoint(name)

    async def save_checkpoint(
        self, name: str, position: Position, connection: asyncpg.Connection | None = None
    ) -> None:
        if self._its_consumer(name) and connection is None:
            self._checkpoints[name] = position
            return
        await self.store.save_checkpoint(name, position, connection)

    async def close(self) -> None:
        """Write what is left; the store (its pool and notifier) stays open."""
        await self.flush()
        await asyncio.gather(*self._background, return_exceptions=True)


def _take(batches: list[EncodedBatch], events: int) -> int:
    """How many of the first ``batches`` make at most ``events`` events (one at least: a
    batch is written whole, as it was appended)."""
    count = taken = 0
    for batch in batches:
        if taken and count + len(batch.event_ids) > events:
            break
        count += len(batch.event_ids)
        taken += 1
    return taken


def _joined(batches: list[EncodedBatch]) -> EncodedBatch:
    """One batch of the events of ``batches``, in order."""
    if len(batches) == 1:
        return batches[0]
    return EncodedBatch(
        event_ids=[value for batch in batches for value in batch.event_ids],
        kinds=[value for batch in batches for value in batch.kinds],
        sources=[value for batch in batches for value in batch.sources],
        causes=[value for batch in batches for value in batch.causes],
        payload_texts=[value for batch in batches for value in batch.payload_texts],
        versions=[value for batch in batches for value in batch.versions],
        payloads=[value for batch in batches for value in batch.payloads],
        blobs={key: text for batch in batches for key, text in batch.blobs.items()},
    )
