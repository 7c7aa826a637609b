"""The per-client relay: every event once and in order to a client that keeps up; a client that
stops reading is cut off after its buffer stayed full for the stall time, with the seq it got
last, and never holds up the source; a client that leaves ends it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from app.server.stream_relay import relay


@dataclass(frozen=True)
class Item:
    seq: int


async def numbered(count: int, *, start: int = 1, forever: bool = False) -> AsyncIterator[Item]:
    for seq in range(start, start + count):
        yield Item(seq)
    while forever:
        await asyncio.sleep(3600)


async def test_a_client_that_keeps_up_gets_every_event_once_in_order() -> None:
    sent: list[int] = []

    async def send(item: Item) -> None:
        sent.append(item.seq)
        await asyncio.sleep(0)

    end = await relay(numbered(500, start=11), send, after_seq=10, capacity=3, stall_seconds=5)
    assert end.reason == "exhausted"
    assert sent == list(range(11, 511))
    assert end.delivered_seq == 510


async def test_a_client_that_reads_nothing_is_cut_off_and_the_source_is_not_held_up() -> None:
    """Its one send never returns: after the buffer (3) is full for the stall time the relay
    stops, says the client got nothing past after_seq, and the source was read only as far
    as the buffer holds (it is never blocked for longer than the stall)."""
    read: list[int] = []
    stuck = asyncio.Event()

    async def source() -> AsyncIterator[Item]:
        for seq in range(1, 10_000):
            read.append(seq)
            yield Item(seq)

    async def send(item: Item) -> None:
        stuck.set()
        await asyncio.Event().wait()  # a client whose socket never drains

    started = time.monotonic()
    end = await relay(source(), send, after_seq=0, capacity=3, stall_seconds=0.2)
    took = time.monotonic() - started
    assert stuck.is_set()
    assert end.reason == "behind"
    assert end.delivered_seq == 0
    # one event in the stuck send, three in the buffer, one waiting for room
    assert len(read) == 5
    assert 0.2 <= took < 2


async def test_the_seq_to_resume_from_is_the_last_one_whose_send_completed() -> None:
    sent: list[int] = []

    async def send(item: Item) -> None:
        if item.seq > 7:
            await asyncio.Event().wait()  # the client stops reading after seq 7
        sent.append(item.seq)

    end = await relay(numbered(100, forever=True), send, after_seq=0, capacity=2, stall_seconds=0.1)
    assert end.reason == "behind"
    assert sent == list(range(1, 8))
    assert end.delivered_seq == 7


async def test_a_slow_client_that_still_reads_within_the_stall_is_kept() -> None:
    sent: list[int] = []

    async def send(item: Item) -> None:
        await asyncio.sleep(0.01)
        sent.append(item.seq)

    end = await relay(numbered(30), send, after_seq=0, capacity=2, stall_seconds=1)
    assert end.reason == "exhausted"
    assert sent == list(range(1, 31))


async def test_a_client_that_leaves_ends_the_relay() -> None:
    gone = asyncio.Event()
    sent: list[int] = []

    async def send(item: Item) -> None:
        sent.append(item.seq)
        if item.seq == 3:
            gone.set()

    end = await relay(
        numbered(3, forever=True),
        send,
        after_seq=0,
        capacity=10,
        stall_seconds=5,
        client_gone=gone.wait(),
    )
    assert end.reason == "gone"
    assert end.delivered_seq == 3


async def test_the_server_closing_ends_the_relay_with_the_seq_to_resume_from() -> None:
    closing = asyncio.Event()
    sent: list[int] = []

    async def send(item: Item) -> None:
        sent.append(item.seq)
        if item.seq == 4:
            closing.set()

    end = await relay(
        numbered(4, forever=True),
        send,
        after_seq=0,
        capacity=10,
        stall_seconds=5,
        client_gone=asyncio.Event().wait(),  # the client stays
        closing=closing.wait(),
    )
    assert end.reason == "closing"
    assert end.delivered_seq == 4 == sent[-1]


async def test_a_failing_send_means_the_client_is_gone() -> None:
    async def send(item: Item) -> None:
        raise ConnectionResetError("peer reset")

    end = await relay(numbered(5, forever=True), send, after_seq=4, capacity=2, stall_seconds=5)
    assert end == end.__class__(reason="gone", delivered_seq=4)


async def test_a_failing_source_is_raised_not_taken_for_the_client() -> None:
    async def broken() -> AsyncIterator[Item]:
        yield Item(1)
        raise RuntimeError("the database is gone")

    async def send(item: Item) -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="database"):
        await relay(broken(), send, after_seq=0, capacity=2, stall_seconds=5)


async def test_a_quiet_stream_sends_keepalives() -> None:
    pings = 0

    async def ping() -> None:
        nonlocal pings
        pings += 1

    async def send(item: Item) -> None:
        pass

    async def leave_later() -> None:
        await asyncio.sleep(0.35)

    end = await relay(
        numbered(0, forever=True),
        send,
        after_seq=0,
        capacity=1,
        stall_seconds=5,
        client_gone=leave_later(),
        idle_seconds=0.1,
        send_idle=ping,
    )
    assert end.reason == "gone"
    assert pings >= 2


def test_a_buffer_holds_at_least_one_event() -> None:
    with pytest.raises(ValueError, match="at least one"):
        asyncio.run(
            relay(
                numbered(1), lambda item: asyncio.sleep(0), after_seq=0, capacity=0, stall_seconds=1
            )
        )
