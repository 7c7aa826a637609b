"""Appends that arrive together share a database call, and still succeed or fail one by one."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import pytest

from app.events import Message, Run, RunOutput
from app.events.canonical import canonical_json
from app.store import (
    ConcurrencyError,
    ContentMismatchError,
    DuplicateEventError,
    EventStore,
    InvalidEventError,
)


async def test_concurrent_appends_share_calls_and_fail_alone(store: EventStore) -> None:
    sessions = [uuid.uuid4() for _ in range(30)]
    for session in sessions:
        await store.append(session, [Run(command="true"), RunOutput(exit_code=0, cause=1)])
    before = store.append_stats

    async def good(session: uuid.UUID) -> int:
        recorded = await store.append(
            session, [Message(content="a"), Message(content="b")], expected_seq=2
        )
        return recorded[-1].seq

    stale, twice, bad_cause = sessions[:3]
    results = await asyncio.gather(
        *(good(s) for s in sessions[3:]),
        store.append(stale, [Message(content="late")], expected_seq=1),
        store.append(twice, [RunOutput(exit_code=1, cause=1)]),
        store.append(bad_cause, [RunOutput(exit_code=1, cause=9)]),
        return_exceptions=True,
    )
    assert results[:-3] == [4] * 27
    assert isinstance(results[-3], ConcurrencyError) and results[-3].actual_seq == 2
    assert isinstance(results[-2], DuplicateEventError)
    assert isinstance(results[-1], InvalidEventError)

    after = store.append_stats
    calls, appends = after.calls - before.calls, after.appends - before.appends
    assert appends == 30 and calls < appends, "concurrent appends should have been grouped"
    for session in sessions:
        assert (await store.verify(session)).ok
        expected = 2 if session in (stale, twice, bad_cause) else 4
        assert await store.last_seq(session) == expected


async def test_grouped_appends_to_one_session_keep_their_order(store: EventStore) -> None:
    session = uuid.uuid4()
    await asyncio.gather(*(store.append(session, [Message(content=str(i))]) for i in range(40)))
    events = await store.read(session)
    assert [e.seq for e in events] == list(range(1, 41))
    assert sorted(int(e.payload["content"]) for e in events) == list(range(40))
    assert (await store.verify(session)).ok


async def test_grouped_resend_is_idempotent(store: EventStore) -> None:
    batches = {uuid.uuid4(): [Message(content="x"), Message(content="y")] for _ in range(10)}
    first = await asyncio.gather(*(store.append(s, b) for s, b in batches.items()))
    again = await asyncio.gather(*(store.append(s, b) for s, b in batches.items()))
    assert first == again
    count = await store.pool.fetchval("SELECT count(*) FROM events")
    assert count == 20


@pytest.mark.parametrize("writers", [2, 16])
async def test_two_stores_grouping_many_sessions_do_not_deadlock(
    store: EventStore, database_url: str, writers: int
) -> None:
    """Groups from two processes lock sessions in one global order: no deadlock."""
    sessions = [uuid.uuid4() for _ in range(6)]
    async with await EventStore.open(
        database_url, config=store.config, masker=store.masker
    ) as other:

        async def hammer(target: EventStore, order: list[uuid.UUID]) -> None:
            for _ in range(15):
                await asyncio.gather(*(target.append(s, [Message(content="m")]) for s in order))

        async with asyncio.timeout(60):
            await asyncio.gather(
                *(hammer(store, sessions) for _ in range(writers // 2)),
                *(hammer(other, sessions[::-1]) for _ in range(writers // 2)),
            )
    for session in sessions:
        assert await store.last_seq(session) == 15 * writers
        assert (await store.verify(session)).ok


async def test_grouped_appends_store_their_messages_and_a_forgery_fails_alone(
    store: EventStore,
) -> None:
    """Appends carrying prompt messages share a call like any others; the messages go in the
    same statement. One message not matching its key refuses that statement: each append then
    goes again on its own, so only the one that sent it fails."""
    sessions = [uuid.uuid4() for _ in range(20)]

    def keyed(text: str) -> dict[str, str]:
        return {hashlib.sha256(text.encode()).hexdigest(): text}

    sent = {s: keyed(canonical_json({"role": "user", "content": str(s)})) for s in sessions}

    async def append_all(group: list[uuid.UUID]) -> list[object]:
        return await asyncio.gather(
            *(store.append(s, [Message(content="m")], messages=sent[s]) for s in group),
            return_exceptions=True,
        )

    before = store.append_stats
    results = await append_all(sessions[:10])
    assert all(isinstance(r, list) and r[0].seq == 1 for r in results), results
    assert store.append_stats.calls - before.calls < 10, "appends should have been grouped"

    forged = sessions[-1]
    sent[forged] = {next(iter(sent[forged])): canonical_json({"role": "user", "content": "no"})}
    results = await append_all(sessions[10:])
    assert all(isinstance(r, list) and r[0].seq == 1 for r in results[:-1]), results
    assert isinstance(results[-1], ContentMismatchError)
    stored = await store.read_messages([key for s in sessions[:-1] for key in sent[s]])
    assert len(stored) == len(sessions) - 1
    assert await store.read_messages(list(sent[forged])) == {}
    assert await store.last_seq(forged) == 0
