"""A live tail reads the table once per doorbell, not twice.

Before: after handing out the events of a read, the next ``__anext__`` read the table again
at once, although that read had come back short of a page (it had everything there was), so
every delivered event cost two reads: at 100 sessions that doubled the subscriber's queries
and was most of the delivery tail (issue 9; the figures are in the git history of README.md).
The source here is a list in memory that counts reads; the doorbells are the notifier's own
``announce``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from app.store.notifier import Notifier
from app.store.records import Position, RecordedEvent
from app.store.subscriptions import PAGE_SIZE, SessionSubscription
from app.store.tail_reads import TailPage
from tests.support.event_log import user_message


async def _no_connection() -> Any:
    raise AssertionError("the notifier is never started here")


class _Log:
    """One session's events in memory, and how often they were read."""

    def __init__(self, session: uuid.UUID) -> None:
        self.session = session
        self.events: list[RecordedEvent] = []
        self.reads = 0
        self._notifier = Notifier(_no_connection)

    @property
    def notifier(self) -> Notifier:
        return self._notifier

    def append(self, count: int = 1) -> None:
        for _ in range(count):
            seq = len(self.events) + 1
            self.events.append(user_message(self.session, seq))
        self._notifier.announce(str(self.session), len(self.events))  # another process's ring

    async def read_tail(
        self, session_id: uuid.UUID, after_seq: int, *, resolve_blobs: bool
    ) -> TailPage:
        self.reads += 1
        await asyncio.sleep(0)
        newer = [event for event in self.events if event.seq > after_seq]
        return TailPage(newer[:PAGE_SIZE], len(newer) < PAGE_SIZE)

    async def read_all(
        self, after: Position | None = None, limit: int = 1000, *, resolve_blobs: bool = True
    ) -> list[RecordedEvent]:
        raise AssertionError("a session tail reads its session only")

    async def load_checkpoint(self, name: str) -> Position | None:
        return None

    async def save_checkpoint(self, name: str, position: Position) -> None:
        raise AssertionError("a session tail saves no checkpoint")


async def test_one_read_per_doorbell() -> None:
    log = _Log(uuid.uuid4())
    delivered: asyncio.Queue[int] = asyncio.Queue()

    async def consume(tail: SessionSubscription) -> None:
        async for event in tail:  # asks for the next event at once, as a live consumer does
            delivered.put_nowait(event.seq)

    async with SessionSubscription(log, log.session, 0, poll_interval=60) as tail:
        consumer = asyncio.create_task(consume(tail))
        for seq in range(1, 6):
            log.append()
            assert await asyncio.wait_for(delivered.get(), 5) == seq
            for _ in range(5):  # let the tail settle into waiting for the next doorbell
                await asyncio.sleep(0)
        consumer.cancel()
    # One read per doorbell; the code before read again right after each delivery: 10.
    assert log.reads == 5


async def test_a_full_page_is_followed_at_once() -> None:
    """A page as long as the limit may not be all: the next read does not wait for a ring."""
    log = _Log(uuid.uuid4())
    log.append(PAGE_SIZE + 3)
    async with SessionSubscription(log, log.session, 0, poll_interval=60) as tail:
        seqs = [(await asyncio.wait_for(anext(tail), 5)).seq for _ in range(PAGE_SIZE + 3)]
    assert seqs == list(range(1, PAGE_SIZE + 4))
    assert log.reads == 2


async def test_a_ring_during_a_read_is_not_lost() -> None:
    """An event that arrives while the tail reads is delivered on its doorbell."""
    log = _Log(uuid.uuid4())
    async with SessionSubscription(log, log.session, 0, poll_interval=60) as tail:
        log.append()
        first = asyncio.ensure_future(anext(tail))
        await asyncio.sleep(0)  # the tail is inside its read now
        log.append()  # committed and rung while it reads
        assert (await asyncio.wait_for(first, 5)).seq == 1
        assert (await asyncio.wait_for(anext(tail), 5)).seq == 2
