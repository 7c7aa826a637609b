"""Live delivery: every event once, in order, through concurrent writers, and durable
checkpoints (the event store contract: tests/contract/store/conftest.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

from app.events import Message
from app.store import ConcurrencyError, EventStore
from tests.support.subscriptions import take


async def test_eight_concurrent_writers_end_gapless(store: EventStore) -> None:
    session = uuid.uuid4()
    per_writer = 25
    conflicts = Counter()

    async def writer(name: int) -> None:
        written = 0
        last = await store.last_seq(session)
        while written < per_writer:
            try:
                recorded = await store.append(
                    session, [Message(content=f"w{name}-{written}")], expected_seq=last
                )
            except ConcurrencyError as exc:
                conflicts[name] += 1
                last = exc.actual_seq
                continue
            last = recorded[-1].seq
            written += 1

    subscriber = asyncio.create_task(take(store.subscribe(session), 8 * per_writer, timeout=60))
    await asyncio.gather(*(writer(i) for i in range(8)))
    events = await store.read(session)
    assert [e.seq for e in events] == list(range(1, 8 * per_writer + 1))
    contents = [e.payload["content"] for e in events]
    assert len(set(contents)) == len(contents)
    assert sum(conflicts.values()) > 0, "the writers never raced; the test proves nothing"
    assert [e.seq for e in await subscriber] == [e.seq for e in events]
    assert (await store.verify(session)).ok


async def test_fifty_sessions_seen_exactly_once_by_subscribe_all(store: EventStore) -> None:
    sessions = [uuid.uuid4() for _ in range(50)]
    per_session = 20
    total = len(sessions) * per_session
    consumer = asyncio.create_task(take(store.subscribe_all(name="fifty"), total, timeout=60))

    async def write(session: uuid.UUID) -> None:
        for i in range(per_session):
            await store.append(session, [Message(content=f"{session}:{i}")])

    await asyncio.gather(*(write(s) for s in sessions))
    seen = await consumer
    keys = Counter((e.session_id, e.seq) for e in seen)
    assert len(keys) == total and max(keys.values()) == 1
    positions = [e.position for e in seen]
    assert positions == sorted(positions)
    for session in sessions:
        assert [e.seq for e in seen if e.session_id == session] == list(range(1, per_session + 1))


async def test_durable_subscription_resumes_after_its_checkpoint(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content=str(i)) for i in range(1, 6)])
    first = store.subscribe_all(name="projector")
    got = await take(first, 3)
    await first.aclose()  # events 1 and 2 were finished; 3 was handed out last
    checkpoint = await store.load_checkpoint("projector")
    assert checkpoint == got[1].position
    await store.append(session, [Message(content="6")])
    second = store.subscribe_all(name="projector")
    assert [e.seq for e in await take(second, 4)] == [3, 4, 5, 6]
    await second.aclose()


async def test_many_session_tails_in_one_client_each_get_their_own_events(
    store: EventStore, other: EventStore
) -> None:
    """Twenty sessions written at once by another client, each followed by its own
    subscription here (two of one session, from different seqs), payloads past the blob
    threshold and text stored escaped (NUL, a lone surrogate) among them: each tail gets its
    session's events, whole, once and in order, however its reads were shared with the
    others'."""
    sessions = [uuid.uuid4() for _ in range(20)]
    per_session = 15
    big = "x" * (store.config.blob_threshold_bytes + 10)
    for session in sessions:
        await other.append(session, [Message(content=f"{session}:0")])

    def content(session: uuid.UUID, i: int) -> str:
        if i % 5 == 0:
            return big + str(i)
        if i % 7 == 0:  # text PostgreSQL cannot hold as it is: stored escaped
            return f"{session}:{i} NUL\x00 lone \ud800 end"
        return f"{session}:{i}"

    tails = [take(store.subscribe(session), per_session, timeout=60) for session in sessions]
    late = take(store.subscribe(sessions[0], after_seq=4), per_session - 4, timeout=60)
    followers = [asyncio.ensure_future(tail) for tail in [*tails, late]]

    async def write(session: uuid.UUID) -> None:
        for i in range(1, per_session):
            await other.append(session, [Message(content=content(session, i))])

    await asyncio.gather(*(write(session) for session in sessions))
    *seen, seen_late = await asyncio.gather(*followers)
    for session, events in zip(sessions, seen, strict=True):
        assert {e.session_id for e in events} == {session}
        assert [e.seq for e in events] == list(range(1, per_session + 1))
        assert [e.payload["content"] for e in events[1:]] == [
            content(session, i) for i in range(1, per_session)
        ]
    assert [e.seq for e in seen_late] == list(range(5, per_session + 1))
    assert seen_late == seen[0][4:]
    for tail in followers:
        assert tail.done()
