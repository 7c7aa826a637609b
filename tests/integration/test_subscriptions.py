"""Live delivery: every event once, in order, through concurrency, late commits and reconnects."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator

from app.events import Message
from app.store import ConcurrencyError, EventStore, RecordedEvent


async def take(stream: AsyncIterator[RecordedEvent], n: int, timeout: float = 20) -> list:
    """The next ``n`` events of a subscription, or fail after ``timeout`` seconds."""
    got: list[RecordedEvent] = []
    async with asyncio.timeout(timeout):
        async for event in stream:
            got.append(event)
            if len(got) == n:
                break
    return got


async def nothing_more(stream: AsyncIterator[RecordedEvent], wait: float = 0.6) -> bool:
    try:
        async with asyncio.timeout(wait):
            await anext(stream)
    except TimeoutError:
        return True
    return False


async def test_subscribe_delivers_backlog_then_live_events(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content="before")])
    stream = store.subscribe(session)
    assert [e.payload["content"] for e in await take(stream, 1)] == ["before"]
    waiter = asyncio.create_task(take(stream, 2))
    await asyncio.sleep(0.05)
    await store.append(session, [Message(content="live 1")])
    await store.append(session, [Message(content="live 2")])
    assert [e.seq for e in await waiter] == [2, 3]
    assert await nothing_more(stream)
    await stream.aclose()


async def test_subscribe_after_seq_skips_earlier_events(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content=str(i)) for i in range(5)])
    stream = store.subscribe(session, after_seq=3)
    assert [e.seq for e in await take(stream, 2)] == [4, 5]
    await stream.aclose()


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


async def test_late_commit_is_delivered_not_skipped(store: EventStore) -> None:
    """A row with a smaller global_position that commits after a larger one still arrives."""
    early, late = uuid.uuid4(), uuid.uuid4()
    consumer = store.subscribe_all()
    async with store.pool.acquire() as slow:
        transaction = slow.transaction()
        await transaction.start()
        await slow.fetch(
            "SELECT * FROM chronicle_append($1, NULL, $2, $3, $4, $5, $6, $7)",
            early,
            [uuid.uuid4()],
            ["message"],
            ["user"],
            [None],
            ['{"content":"early"}'],
            [1],
        )
        await store.append(late, [Message(content="late")])
        positions = await store.pool.fetch(
            "SELECT global_position FROM events ORDER BY global_position"
        )
        assert len(positions) == 1, "the uncommitted row must not be visible yet"
        # Not delivered while an older transaction is open: it could still commit before it.
        assert await nothing_more(consumer)
        await transaction.commit()
    got = await take(consumer, 2)
    assert [e.payload["content"] for e in got] == ["early", "late"]
    assert got[0].global_position < got[1].global_position
    await consumer.aclose()


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


async def test_checkpoint_saved_in_the_consumers_transaction(store: EventStore) -> None:
    session = uuid.uuid4()
    [recorded] = await store.append(session, [Message(content="x")])
    async with store.pool.acquire() as connection:
        async with connection.transaction():
            await store.save_checkpoint("own", recorded.position, connection=connection)
            raise_inside = False
        assert not raise_inside
    assert await store.load_checkpoint("own") == recorded.position
    try:
        async with store.pool.acquire() as connection, connection.transaction():
            await store.save_checkpoint("rolled", recorded.position, connection=connection)
            raise RuntimeError("consumer failed")
    except RuntimeError:
        pass
    assert await store.load_checkpoint("rolled") is None


async def test_subscription_survives_killed_listener(store: EventStore, database_url: str) -> None:
    session = uuid.uuid4()
    stream = store.subscribe(session)
    everything = store.subscribe_all()
    await store.append(session, [Message(content="1")])
    assert [e.seq for e in await take(stream, 1)] == [1]
    assert [e.seq for e in await take(everything, 1)] == [1]
    pid = store.notifier.backend_pid
    assert await store.pool.fetchval("SELECT pg_terminate_backend($1)", pid)
    # Appends from another process while the listener is down: no NOTIFY reaches us.
    async with await EventStore.open(
        database_url, config=store.config, masker=store.masker
    ) as other:
        await other.append(session, [Message(content="2"), Message(content="3")])
        assert [e.seq for e in await take(stream, 2)] == [2, 3]
        assert [e.seq for e in await take(everything, 2)] == [2, 3]
        async with asyncio.timeout(10):
            while store.notifier.connections_made < 2:
                await asyncio.sleep(0.05)
        assert store.notifier.backend_pid != pid
        await other.append(session, [Message(content="4")])
    assert [e.seq for e in await take(stream, 1)] == [4]
    assert [e.seq for e in await take(everything, 1)] == [4]
    assert await nothing_more(stream) and await nothing_more(everything)
    await stream.aclose()
    await everything.aclose()


async def test_one_notification_per_append_after_commit(
    store: EventStore, database_url: str
) -> None:
    import asyncpg

    received: list[str] = []
    listener = await asyncpg.connect(database_url)
    await listener.add_listener("chronicle_events", lambda *args: received.append(args[-1]))
    try:
        session = uuid.uuid4()
        await store.append(session, [Message(content="a")])
        await store.append(session, [Message(content=str(i)) for i in range(5)])  # one batch
        async with asyncio.timeout(5):
            while len(received) < 2:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert received == [f"{session}:1", f"{session}:6"]
        # A writer calling the SQL function directly gets the NOTIFY inside its transaction.
        await store.pool.fetch(
            "SELECT * FROM chronicle_append($1, 6, $2, '{message}', '{user}', '{NULL}', $3, '{1}')",
            session, [uuid.uuid4()], ['{"content":"direct"}'],
        )  # fmt: skip
        async with asyncio.timeout(5):
            while len(received) < 3:
                await asyncio.sleep(0.01)
        assert received[2] == f"{session}:7"
    finally:
        await listener.close()
