"""Session subscriptions rung together share one catch-up read (app/store/tail_reads.py).

The source is a dictionary of sessions' events in memory that records every query it is
asked: which sessions, from which seq. What matters is what each reader gets (exactly the
events after its own cursor, and whether that was all), and how many queries it took.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping

import pytest

from app.store.blobs import MissingBlobError
from app.store.errors import DatabaseUnavailableError
from app.store.records import RecordedEvent
from app.store.tail_reads import TailPage, TailReads
from tests.support.event_log import user_message

PAGE = 10


class _Table:
    """Sessions' events, the queries asked of them, and sessions whose rows fail to read."""

    def __init__(self) -> None:
        self.events: dict[uuid.UUID, list[RecordedEvent]] = {}
        self.queries: list[dict[uuid.UUID, int]] = []
        self.broken: set[uuid.UUID] = set()
        self.away = False
        self.gate: asyncio.Event | None = None

    def session(self, count: int) -> uuid.UUID:
        session = uuid.uuid4()
        self.events[session] = [user_message(session, seq) for seq in range(1, count + 1)]
        return session

    async def read_tails(
        self, cursors: Mapping[uuid.UUID, int], limit: int, resolve_blobs: bool
    ) -> list[RecordedEvent]:
        self.queries.append(dict(cursors))
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(0)
        if self.away:
            raise DatabaseUnavailableError("PostgreSQL is unavailable: test")
        if self.broken & set(cursors):
            raise MissingBlobError("a blob is gone")
        rows: list[RecordedEvent] = []
        for session, after in cursors.items():
            rows += [event for event in self.events[session] if event.seq > after][:limit]
        return rows


def _seqs(page: TailPage) -> list[int]:
    return [event.seq for event in page.events]


async def test_readers_rung_together_share_one_query() -> None:
    table = _Table()
    reads = TailReads(table.read_tails, PAGE)
    sessions = [table.session(3) for _ in range(8)]
    pages = await asyncio.gather(
        *(reads.read(session, 1, resolve_blobs=True) for session in sessions)
    )
    assert len(table.queries) == 1
    assert table.queries[0] == dict.fromkeys(sessions, 1)
    for session, page in zip(sessions, pages, strict=True):
        assert _seqs(page) == [2, 3] and page.complete
        assert {event.session_id for event in page.events} == {session}


async def test_a_reader_alone_is_answered_without_waiting_for_others() -> None:
    table = _Table()
    reads = TailReads(table.read_tails, PAGE)
    session = table.session(2)
    page = await asyncio.wait_for(reads.read(session, 0, resolve_blobs=True), 1)
    assert _seqs(page) == [1, 2] and page.complete


async def test_requests_made_during_a_read_go_out_together_in_the_next() -> None:
    table = _Table()
    table.gate = asyncio.Event()
    reads = TailReads(table.read_tails, PAGE)
    first, *later = [table.session(2) for _ in range(4)]
    pending_first = asyncio.ensure_future(reads.read(first, 0, resolve_blobs=True))
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(table.queries) == 1  # the first read is on its way, held at the gate
    pending_later = [
        asyncio.ensure_future(reads.read(session, 0, resolve_blobs=True)) for session in later
    ]
    for _ in range(3):
        await asyncio.sleep(0)
    table.gate.set()
    assert _seqs(await pending_first) == [1, 2]
    for page in await asyncio.gather(*pending_later):
        assert _seqs(page) == [1, 2]
    assert table.queries[1:] == [dict.fromkeys(later, 0)]


async def test_each_reader_gets_the_events_after_its_own_cursor() -> None:
    """Two readers of one session at different seqs: one query from the earlier seq, each
    handed only what comes after its own."""
    table = _Table()
    reads = TailReads(table.read_tails, PAGE)
    session = table.session(5)
    behind, ahead = await asyncio.gather(
        reads.read(session, 1, resolve_blobs=True), reads.read(session, 3, resolve_blobs=True)
    )
    assert table.queries == [{session: 1}]
    assert _seqs(behind) == [2, 3, 4, 5] and behind.complete
    assert _seqs(ahead) == [4, 5] and ahead.complete


async def test_a_full_page_is_not_complete_even_when_filtered_short() -> None:
    """The reader further ahead gets fewer than a page from a read that filled one: it must
    read again at once, not wait for a doorbell."""
    table = _Table()
    reads = TailReads(table.read_tails, PAGE)
    session = table.session(PAGE + 5)
    behind, ahead = await asyncio.gather(
        reads.read(session, 0, resolve_blobs=True), reads.read(session, 4, resolve_blobs=True)
    )
    assert _seqs(behind) == list(range(1, PAGE + 1)) and not behind.complete
    assert _seqs(ahead) == list(range(5, PAGE + 1)) and not ahead.complete


async def test_whole_and_stored_payloads_are_read_apart() -> None:
    table = _Table()
    seen: list[bool] = []

    async def read_tails(
        cursors: Mapping[uuid.UUID, int], limit: int, resolve_blobs: bool
    ) -> list[RecordedEvent]:
        seen.append(resolve_blobs)
        return await table.read_tails(cursors, limit, resolve_blobs)

    reads = TailReads(read_tails, PAGE)
    one, two = table.session(1), table.session(1)
    await asyncio.gather(
        reads.read(one, 0, resolve_blobs=True), reads.read(two, 0, resolve_blobs=False)
    )
    assert sorted(seen) == [False, True]


async def test_one_sessions_bad_row_fails_only_its_readers() -> None:
    table = _Table()
    reads = TailReads(table.read_tails, PAGE)
    good, bad = table.session(2), table.session(2)
    table.broken.add(bad)
    results = await asyncio.gather(
        reads.read(good, 0, resolve_blobs=True),
        reads.read(bad, 0, resolve_blobs=True),
        return_exceptions=True,
    )
    assert isinstance(results[0], TailPage) and _seqs(results[0]) == [1, 2]
    assert isinstance(results[1], MissingBlobError)


async def test_a_database_away_fails_every_reader_once() -> None:
    """No session-by-session retry when the database itself is gone: each reader's own
    retry loop takes over."""
    table = _Table()
    reads = TailReads(table.read_tails, PAGE)
    sessions = [table.session(1) for _ in range(3)]
    table.away = True
    results = await asyncio.gather(
        *(reads.read(session, 0, resolve_blobs=True) for session in sessions),
        return_exceptions=True,
    )
    assert all(isinstance(result, DatabaseUnavailableError) for result in results)
    assert len(table.queries) == 1
    table.away = False
    assert _seqs(await reads.read(sessions[0], 0, resolve_blobs=True)) == [1]


async def test_a_reader_that_gives_up_takes_nothing_from_the_others() -> None:
    table = _Table()
    table.gate = asyncio.Event()
    reads = TailReads(table.read_tails, PAGE)
    quitter, stayer = table.session(2), table.session(2)
    quitting = asyncio.ensure_future(reads.read(quitter, 0, resolve_blobs=True))
    staying = asyncio.ensure_future(reads.read(stayer, 0, resolve_blobs=True))
    for _ in range(3):
        await asyncio.sleep(0)
    quitting.cancel()
    table.gate.set()
    assert _seqs(await staying) == [1, 2]
    with pytest.raises(asyncio.CancelledError):
        await quitting
    # and the next read goes out as usual
    assert _seqs(await reads.read(quitter, 1, resolve_blobs=True)) == [2]
