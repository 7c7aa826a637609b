"""Reads of the log on a hot standby (CHRONICLE_READ_DATABASE_URL): served there when it has
caught up, and never less than the primary had when it has not. The standby is a real one
streaming from the embedded primary; its replay is paused to make it fall behind."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest

from app.config import Settings
from app.events import Message, SessionCreated
from app.store import EventStore, Position, RecordedEvent
from tests.support.standby import Pair, primary_and_standby
from tests.support.waiting import until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    with primary_and_standby() as made:
        yield made


@pytest.fixture
async def store(pair: Pair) -> AsyncIterator[EventStore]:
    masker = Settings(data_dir=pair.data_dir).masker()
    pair.resume_replay()  # a test that failed half-way leaves it paused
    async with await EventStore.open(
        pair.primary_url, masker=masker, read_dsns=[pair.standby_url]
    ) as opened:
        yield opened


def standby_scans(pair: Pair) -> int:
    """Scans of ``events`` (its months) the standby itself counted: reads it served (of a
    small table, PostgreSQL scans it whole rather than through an index)."""
    with psycopg.connect(pair.standby_admin_url, autocommit=True) as standby:
        row = standby.execute(
            "SELECT pg_stat_clear_snapshot(),"
            " coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::bigint"
            " FROM pg_stat_user_tables"
            " WHERE relid IN (SELECT relid FROM pg_partition_tree('events'))"  # every month
        ).fetchone()
    assert row is not None
    return int(row[1])


async def new_session(store: EventStore, messages: int) -> tuple[uuid.UUID, list[RecordedEvent]]:
    session = uuid.uuid4()
    events = [SessionCreated(config={})] + [Message(content=f"m{n}") for n in range(messages)]
    return session, await store.append(session, events, expected_seq=0)


async def test_a_caught_up_standby_serves_session_reads(store: EventStore, pair: Pair) -> None:
    session, written = await new_session(store, 30)
    await until(pair.caught_up, timeout=15, what="the standby to replay the appends")
    scans = standby_scans(pair)
    served = store.replica_stats.served

    read = await store.read(session)
    page = await store.read(session, after_seq=10, limit=5)

    assert [e.hash for e in read] == [e.hash for e in written]
    assert [e.seq for e in page] == [11, 12, 13, 14, 15]
    assert store.replica_stats.served == served + 2
    # the standby's own statistics count the reads (they are flushed when a backend ends)
    await until(lambda: standby_scans(pair) > scans, timeout=15, what="standby stats")


async def test_a_standby_behind_never_hands_out_less_than_the_primary_has(
    store: EventStore, pair: Pair
) -> None:
    session, written = await new_session(store, 5)
    await until(pair.caught_up, timeout=15, what="the standby to replay the appends")
    pair.pause_replay()
    try:
        more = await store.append(
            session, [Message(content=f"late {n}") for n in range(7)], expected_seq=len(written)
        )
        behind = store.replica_stats.behind
        served = store.replica_stats.served

        read = await store.read(session)  # the standby has 6 of 13: the primary answers
        assert [e.seq for e in read] == list(range(1, 14))
        assert [e.hash for e in read] == [e.hash for e in written + more]
        assert store.replica_stats.behind == behind + 1

        early = await store.read(session, limit=4)  # all of it on the standby: served there
        assert [e.seq for e in early] == [1, 2, 3, 4]
        assert store.replica_stats.served == served + 1

        # a live subscription gets the late events now, not at its next poll
        async with store.subscribe(session, after_seq=len(written)) as tail:
            got = [await asyncio.wait_for(anext(tail), 5) for _ in range(len(more))]
        assert [e.seq for e in got] == [e.seq for e in more]
    finally:
        pair.resume_replay()


async def test_the_global_stream_is_gap_free_and_exactly_once_across_servers(
    store: EventStore, pair: Pair
) -> None:
    """Reads alternate between the standby and the primary (both named as read URLs) while
    the standby's replay is paused and resumed under appends: every event once, in order."""
    masker = Settings(data_dir=pair.data_dir).masker()
    start = Position(*(await store.pool.fetchrow(
        "SELECT tx, global_position FROM events ORDER BY tx DESC, global_position DESC LIMIT 1"
    ) or (0, 0)))  # fmt: skip
    async with await EventStore.open(
        pair.primary_url, masker=masker, read_dsns=[pair.standby_url, pair.primary_url]
    ) as alternating:
        written: list[RecordedEvent] = []
        seen: list[RecordedEvent] = []

        async def read_along() -> None:
            async with alternating.subscribe_all(start=start) as stream:
                while len(seen) < 4 * 26:
                    seen.append(await asyncio.wait_for(anext(stream), 10))

        reader = asyncio.create_task(read_along())
        for round_ in range(4):
            if round_ % 2 == 0:
                pair.pause_replay()
            else:
                pair.resume_replay()
            for _ in range(2):
                written += (await new_session(store, 12))[1]
                await asyncio.sleep(0.05)
        pair.resume_replay()
        await asyncio.wait_for(reader, 30)
        stats = alternating.replica_stats

    assert [e.event_id for e in seen] == [e.event_id for e in written]
    assert len({e.event_id for e in seen}) == len(seen)
    assert stats.served > 0  # the standby (or the primary as a read URL) answered some


async def test_a_standby_that_goes_away_rests_while_the_primary_reads(
    store: EventStore, pair: Pair
) -> None:
    session, written = await new_session(store, 3)
    await until(pair.caught_up, timeout=15, what="the standby to replay the appends")
    assert pair.standby.stop()
    try:
        failed = store.replica_stats.failed
        read = await store.read(session)
        assert [e.hash for e in read] == [e.hash for e in written]
        assert store.replica_stats.failed == failed + 1
        # resting: the next reads go straight to the primary, without trying it again
        await store.read(session)
        assert store.replica_stats.failed == failed + 1
    finally:
        pair.standby.start()


async def test_the_global_stream_is_not_caught_up_short_of_the_primary(
    store: EventStore, pair: Pair
) -> None:
    """A global reader on a standby that stopped replaying still gets what the primary has:
    it is never told "nothing more" for events the standby lacks."""
    await until(pair.caught_up, timeout=15, what="the standby to replay the appends")
    start = Position(*(await store.pool.fetchrow(
        "SELECT tx, global_position FROM events ORDER BY tx DESC, global_position DESC LIMIT 1"
    ) or (0, 0)))  # fmt: skip
    pair.pause_replay()
    try:
        _, written = await new_session(store, 4)
        behind = store.replica_stats.behind
        async with store.subscribe_all(start=start) as stream:
            got = [await asyncio.wait_for(anext(stream), 5) for _ in written]
        assert [e.event_id for e in got] == [e.event_id for e in written]
        assert store.replica_stats.behind > behind
    finally:
        pair.resume_replay()
