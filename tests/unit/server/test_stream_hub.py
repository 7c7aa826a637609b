"""The shared feeds: one subscription per session whatever the number of its clients, each
event encoded once, no store read for a client that keeps up; a client behind the window
reads its backlog from the store and misses nothing; a failed subscription is told to every
client and the next client starts afresh."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import NamedTuple
from uuid import UUID

import pytest

from app.events import Message
from app.server.stream_hub import FeedFailedError, StreamHub
from app.store import RecordedEvent
from tests.support.event_log import HandMadeLog


class Wire(NamedTuple):
    seq: int


class Tail:
    """A live tail of the hand-made log, as the store's subscription gives it."""

    def __init__(self, source: Source, after_seq: int) -> None:
        self._source = source
        self._cursor = after_seq
        self.closed = False

    def __aiter__(self) -> Tail:
        return self

    async def __anext__(self) -> RecordedEvent:
        while self._cursor >= len(self._source.log.events):
            if self._source.failure is not None:
                raise self._source.failure
            async with self._source.appended:
                await self._source.appended.wait()
        self._cursor += 1
        return self._source.log.events[self._cursor - 1]

    async def aclose(self) -> None:
        self.closed = True


class Source:
    """The store as a feed sees it, counting subscriptions and reads."""

    def __init__(self) -> None:
        self.log = HandMadeLog()
        self.appended = asyncio.Condition()
        self.tails: list[Tail] = []
        self.reads = 0
        self.failure: Exception | None = None

    async def append(self, count: int) -> int:
        self.log.add(*(Message(content=f"m{i}", source="agent") for i in range(count)))
        async with self.appended:
            self.appended.notify_all()
        return len(self.log.events)

    async def fail(self, failure: Exception) -> None:
        self.failure = failure
        async with self.appended:
            self.appended.notify_all()

    async def last_seq(self, session_id: UUID) -> int:
        return len(self.log.events)

    async def read(
        self, session_id: UUID, after_seq: int = 0, limit: int | None = None
    ) -> list[RecordedEvent]:
        self.reads += 1
        events = self.log.events[after_seq:]
        return events[:limit] if limit is not None else events

    def subscribe(self, session_id: UUID, after_seq: int = 0) -> Tail:
        tail = Tail(self, after_seq)
        self.tails.append(tail)
        return tail

    def live_tails(self) -> int:
        return sum(not tail.closed for tail in self.tails)


class Encoder:
    def __init__(self) -> None:
        self.encoded = 0

    def __call__(self, event: RecordedEvent) -> Wire:
        self.encoded += 1
        return Wire(event.seq)


async def take(events: AsyncIterator[Wire], count: int) -> list[int]:
    async with asyncio.timeout(5):
        return [(await anext(events)).seq for _ in range(count)]


async def test_clients_of_one_session_share_one_subscription_and_each_encoding() -> None:
    source, encode = Source(), Encoder()
    hub = StreamHub(source, encode)
    session = source.log.session_id
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(hub.following(session, 0)) for _ in range(10)]
        await asyncio.sleep(0.01)  # the feed has started at the head
        await source.append(5)
        got = await asyncio.gather(*(take(client, 5) for client in clients))
        assert got == [[1, 2, 3, 4, 5]] * 10
        assert source.live_tails() == 1 and hub.feeds() == 1
        assert encode.encoded == 5  # once per event, not once per client
        assert source.reads == 0  # clients that keep up never read the store
    assert source.live_tails() == 0 and hub.feeds() == 0  # the last client stopped the feed


async def test_a_client_with_a_backlog_reads_it_and_then_follows_the_feed() -> None:
    source = Source()
    hub = StreamHub(source, Encoder(), window=4)
    session = source.log.session_id
    await source.append(12)
    async with hub.following(session, 2) as events:
        backlog = await take(events, 10)
        await source.append(3)
        live = await take(events, 3)
    assert backlog + live == list(range(3, 16))
    assert source.reads >= 1


async def test_a_client_left_behind_by_the_window_catches_up_from_the_store() -> None:
    source = Source()
    hub = StreamHub(source, Encoder(), window=3)
    session = source.log.session_id
    async with hub.following(session, 0) as slow, hub.following(session, 0) as fast:
        await asyncio.sleep(0.01)
        await source.append(2)
        assert await take(slow, 1) == [1]
        await source.append(20)  # far more than the window while slow reads nothing
        assert await take(fast, 22) == list(range(1, 23))
        reads = source.reads
        assert await take(slow, 21) == list(range(2, 23))  # once each, in order
        assert source.reads > reads  # what the window no longer held came from the store


async def test_a_client_past_the_head_waits_for_its_next_event() -> None:
    source = Source()
    hub = StreamHub(source, Encoder())
    session = source.log.session_id
    await source.append(3)
    async with hub.following(session, 5) as events:
        waiting = asyncio.ensure_future(take(events, 1))
        await source.append(2)  # seqs 4 and 5: not after 5
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await source.append(1)
        assert await waiting == [6]


async def test_a_failed_subscription_is_raised_to_every_client_and_the_next_starts_afresh() -> None:
    source = Source()
    hub = StreamHub(source, Encoder())
    session = source.log.session_id
    async with hub.following(session, 0) as one, hub.following(session, 0) as two:
        await asyncio.sleep(0.01)
        await source.fail(ConnectionError("the database went away"))
        for events in (one, two):
            with pytest.raises(FeedFailedError) as failed:
                await take(events, 1)
            assert isinstance(failed.value.__cause__, ConnectionError)
        source.failure = None
        async with hub.following(session, 0) as three:
            await asyncio.sleep(0.01)
            await source.append(1)
            assert await take(three, 1) == [1]
    assert source.live_tails() == 0


async def test_close_wakes_every_stream() -> None:
    hub = StreamHub(Source(), Encoder())
    waiting = asyncio.ensure_future(hub.closing.wait())
    await asyncio.sleep(0)
    assert not waiting.done()
    hub.close()
    async with asyncio.timeout(1):
        await waiting
