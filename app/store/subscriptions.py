"""Live tails over the log: one session by ``seq``, all sessions by ``(tx, global_position)``.

Each subscription keeps its own cursor and reads the table to catch up: at start, after every
doorbell from the notifier, after reconnects, and on a slow poll (a session's subscriptions
read through the store's ``read_tail``, which pools the reads wanted at the same time into
one query: app/store/tail_reads.py). It therefore delivers every
event once and in order even when notifications are lost or the database restarts.

Subscriptions are plain async iterators (not generators), so cancelling a pending
``__anext__`` — ``asyncio.wait_for(anext(sub), 1)`` — loses nothing: the next call carries on
from the same cursor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Protocol, Self
from uuid import UUID

from app.store.errors import DatabaseUnavailableError
from app.store.notifier import Notifier, Wakeup
from app.store.records import Position, RecordedEvent
from app.store.tail_reads import TailPage
from app.store.transient import TRANSIENT_ERRORS

log = logging.getLogger(__name__)

PAGE_SIZE = 1000
#: A durable subscription saves its checkpoint at least this often while busy.
CHECKPOINT_EVERY_EVENTS = 500
CHECKPOINT_EVERY_SECONDS = 1.0
#: A read failed for want of a database (the store's own retries spent too): read again.
_DATABASE_AWAY: tuple[type[BaseException], ...] = (*TRANSIENT_ERRORS, DatabaseUnavailableError)


class SubscriptionSource(Protocol):
    """What a subscription needs of the store (``EventStore`` is one): its doorbells, its
    reads and its checkpoints. Subscriptions know nothing else of it."""

    @property
    def notifier(self) -> Notifier: ...

    async def read_tail(
        self, session_id: UUID, after_seq: int, *, resolve_blobs: bool
    ) -> TailPage: ...

    async def read_all(
        self, after: Position | None = None, limit: int = 1000, *, resolve_blobs: bool = True
    ) -> list[RecordedEvent]: ...

    async def load_checkpoint(self, name: str) -> Position | None: ...

    async def save_checkpoint(self, name: str, position: Position) -> None: ...


class Subscription:
    """Shared machinery: a buffer of read-ahead events, a doorbell, retrying catch-up reads."""

    def __init__(
        self,
        store: SubscriptionSource,
        watch_key: str | None,
        resolve_blobs: bool,
        poll_interval: float,
    ) -> None:
        self._store = store
        self._watch_key = watch_key
        #: Seconds between reads of the table while no doorbell rings (notifications are lost
        #: while disconnected), and the longest pause between retries of a failed read.
        self._poll_interval = poll_interval
        #: Whole payloads (the default), or as stored (see ``EventStore.read``).
        self._resolve_blobs = resolve_blobs
        self._wakeup: Wakeup | None = store.notifier.watch(watch_key)
        self._buffer: deque[RecordedEvent] = deque()
        self._closed = False
        self._must_read = True
        #: The last read came back short of a page: it had everything there was, so the next
        #: one waits for a doorbell (or the poll) instead of asking the table again at once.
        self._caught_up = False

    def __aiter__(self) -> Self:
        return self

    def buffered(self) -> int:
        """Events read and not yet handed out: that many ``__anext__`` calls return without
        waiting (a consumer that applies events in batches takes them together)."""
        return len(self._buffer)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _read_page(self) -> TailPage:
        raise NotImplementedError

    def _has_news(self, wakeup: Wakeup) -> bool:
        return True

    def _advance(self, event: RecordedEvent) -> None:
        raise NotImplementedError

    async def _before_next(self) -> None:
        """Hook run at every ``__anext__``: the consumer is done with the previous event."""

    async def __anext__(self) -> RecordedEvent:
        if self._closed or self._wakeup is None:
            raise StopAsyncIteration
        await self._before_next()
        while not self._buffer:
            wakeup = self._wakeup
            if self._caught_up:
                await self._news(wakeup)
            self._must_read = wakeup.must_read  # a reconnect or a fallback poll: read the table
            wakeup.clear()  # a ring during the read below stays set for the next wait
            page = await self._read_retrying()
            self._caught_up = page.complete
            self._buffer.extend(page.events)
        event = self._buffer.popleft()
        self._advance(event)
        return event

    async def _news(self, wakeup: Wakeup) -> None:
        """Wait for a doorbell with something we have not read, or for the fallback poll."""
        while True:
            rang = await wakeup.wait(self._poll_interval)
            # A doorbell that only repeats what we already have needs no read.
            if not rang or wakeup.must_read or self._has_news(wakeup):
                return
            wakeup.clear()

    async def _read_retrying(self) -> TailPage:
        """Keep trying through connection loss and server restarts."""
        backoff = 0.05
        while True:
            try:
                return await self._read_page()
            except _DATABASE_AWAY as exc:
                # the store's own retries spent (a failover takes longer): keep trying
                log.warning("subscription read failed (%s); retrying", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._poll_interval)

    def _unwatch(self) -> None:
        if self._wakeup is not None:
            self._store.notifier.unwatch(self._watch_key, self._wakeup)
            self._wakeup = None

    async def aclose(self) -> None:
        self._closed = True
        self._unwatch()

    def __del__(self) -> None:
        self._unwatch()


class SessionSubscription(Subscription):
    """Every event of one session after ``after_seq``, in ``seq`` order."""

    def __init__(
        self,
        store: SubscriptionSource,
        session_id: UUID,
        after_seq: int,
        *,
        resolve_blobs: bool = True,
        poll_interval: float,
    ) -> None:
        super().__init__(store, str(session_id), resolve_blobs, poll_interval)
        self.session_id = session_id
        self._read_cursor = after_seq
        #: seq of the last event handed to the consumer.
        self.cursor = after_seq

    async def _read_page(self) -> TailPage:
        assert self._wakeup is not None
        # This process's own appends arrive with their events: no read when they continue
        # exactly where we are and nothing else is known to be missing.
        offered = self._wakeup.take_offered(self._read_cursor)
        if offered and not self._must_read and self._wakeup.latest_seq <= offered[-1].seq:
            self._read_cursor = offered[-1].seq
            if not self._resolve_blobs:
                offered = [event._replace(payload=event.stored_payload) for event in offered]
            return TailPage(offered, len(offered) < PAGE_SIZE)
        # Read with the process's other subscriptions rung at the same time: one query.
        page = await self._store.read_tail(
            self.session_id, self._read_cursor, resolve_blobs=self._resolve_blobs
        )
        if page.events:
            self._read_cursor = page.events[-1].seq
        return page

    def _has_news(self, wakeup: Wakeup) -> bool:
        return wakeup.latest_seq > self._read_cursor or bool(wakeup.offered)

    def _advance(self, event: RecordedEvent) -> None:
        self.cursor = event.seq


class GlobalSubscription(Subscription):
    """Every session's events in commit-safe order, optionally with a durable checkpoint.

    With a ``name``, the position of the events the consumer has finished with (it asked for
    the next one, or closed the subscription) is saved under that name, so a restart resumes
    after them: delivery is at-least-once across crashes. A consumer that writes state of its
    own should pass ``auto_checkpoint=False`` and save ``event.position`` with
    ``EventStore.save_checkpoint(name, position, connection)`` in its own transaction.
    """

    def __init__(
        self,
        store: SubscriptionSource,
        name: str | None,
        start: Position | None,
        auto_checkpoint: bool,
        *,
        resolve_blobs: bool = True,
        poll_interval: float,
    ) -> None:
        super().__init__(store, None, resolve_blobs, poll_interval)
        self.name = name
        self._start = start
        self._auto_checkpoint = auto_checkpoint and name is not None
        self._read_cursor: Position | None = None
        self._handed_out: Position | None = None
        self._done: Position | None = None
        self._saved: Position | None = None
        self._saved_at = time.monotonic()
        self._unsaved = 0

    async def _read_page(self) -> TailPage:
        if self._read_cursor is None:
            start = self._start
            if start is None and self.name is not None:
                start = await self._store.load_checkpoint(self.name)
            self._read_cursor = self._saved = self._done = start or Position.origin()
        page = await self._store.read_all(
            after=self._read_cursor, limit=PAGE_SIZE, resolve_blobs=self._resolve_blobs
        )
        if page:
            self._read_cursor = page[-1].position
        return TailPage(page, len(page) < PAGE_SIZE)

    def _advance(self, event: RecordedEvent) -> None:
        self._handed_out = event.position

    async def _before_next(self) -> None:
        if self._handed_out is not None and self._handed_out != self._done:
            self._done = self._handed_out
            self._unsaved += 1
        if (
            self._unsaved >= CHECKPOINT_EVERY_EVENTS
            or time.monotonic() - self._saved_at > CHECKPOINT_EVERY_SECONDS
            or not self._buffer
        ):
            await self._save()

    async def _save(self) -> None:
        done = self._done
        if not self._auto_checkpoint or done is None or done == self._saved:
            return
        assert self.name is not None
        try:
            await self._store.save_checkpoint(self.name, done)
        except TRANSIENT_ERRORS as exc:  # saved again later; the worst case is a redelivery
            log.warning("could not save checkpoint %r: %s", self.name, exc)
            return
        self._saved, self._saved_at, self._unsaved = done, time.monotonic(), 0

    async def aclose(self) -> None:
        """Stop; the events before the last one handed out count as done."""
        if not self._closed:
            await self._save()
        await super().aclose()
