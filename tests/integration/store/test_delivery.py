"""Live delivery through PostgreSQL: a row that commits late, the checkpoint saved in the
consumer's own transaction, a killed listening connection, one NOTIFY per append."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from app.events import Message
from app.events.masking import SecretMasker
from app.store import EventStore
from app.store.config import StoreConfig
from tests.support.subscriptions import nothing_more, take
from tests.support.waiting import until


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
        # The notifier tells no one it reconnected: its counter is looked at.
        await until(
            lambda: store.notifier.connections_made >= 2,
            timeout=10,
            what="the listening connection re-established",
        )
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
    received: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(database_url)
    await listener.add_listener("chronicle_events", lambda *args: received.put_nowait(args[-1]))

    async def notified(count: int) -> list[str]:
        async with asyncio.timeout(5):
            return [await received.get() for _ in range(count)]

    try:
        session = uuid.uuid4()
        await store.append(session, [Message(content="a")])
        await store.append(session, [Message(content=str(i)) for i in range(5)])  # one batch
        assert await notified(2) == [f"{session}:1", f"{session}:6"]
        with pytest.raises(TimeoutError):  # and no more: waiting it out is the check
            await asyncio.wait_for(received.get(), 0.2)
        # A writer calling the SQL function directly gets the NOTIFY inside its transaction.
        await store.pool.fetch(
            "SELECT * FROM chronicle_append($1, 6, $2, '{message}', '{user}', '{NULL}', $3, '{1}')",
            session, [uuid.uuid4()], ['{"content":"direct"}'],
        )  # fmt: skip
        assert await notified(1) == [f"{session}:7"]
    finally:
        await listener.close()


async def test_a_process_that_only_writes_hears_no_notifications(
    app_database_url: str, database_url: str
) -> None:
    """Its listening connection LISTENs only while something watches: before, it heard the
    NOTIFY of each of its own appends (20 below) and paid ~75-100 us of CPU for each."""
    received: asyncio.Queue[str] = asyncio.Queue()
    outside = await asyncpg.connect(database_url)
    await outside.add_listener("chronicle_events", lambda *args: received.put_nowait(args[-1]))
    # No fallback poll within the test: only a doorbell can deliver in time.
    config = StoreConfig(poll_interval=600)
    try:
        async with (
            await EventStore.open(app_database_url, config=config, masker=SecretMasker()) as store,
            await EventStore.open(app_database_url, config=config, masker=SecretMasker()) as other,
        ):
            session = uuid.uuid4()
            for seq in range(20):
                await store.append(session, [Message(content=str(seq))], expected_seq=seq)
            async with asyncio.timeout(5):  # other processes are still woken, once each
                assert [await received.get() for _ in range(20)][-1] == f"{session}:20"
            assert store.notifier.notifications_heard == 0 and not store.notifier.listening

            stream = store.subscribe(session, after_seq=20)
            await until(lambda: store.notifier.listening, timeout=5, what="LISTEN")
            await other.append(session, [Message(content="from elsewhere")], expected_seq=20)
            assert [e.seq for e in await take(stream, 1, timeout=5)] == [21]
            await stream.aclose()
            await until(lambda: not store.notifier.listening, timeout=5, what="UNLISTEN")
            heard = store.notifier.notifications_heard
            assert heard >= 1
            await other.append(session, [Message(content="unheard")], expected_seq=21)
            await store.append(session, [Message(content="ours")], expected_seq=22)
            async with asyncio.timeout(5):
                assert [await received.get() for _ in range(3)][-1] == f"{session}:23"
            assert store.notifier.notifications_heard == heard
    finally:
        await outside.close()


async def test_an_append_before_the_listen_takes_effect_is_delivered(
    app_database_url: str,
) -> None:
    """The first watcher starts the LISTEN in the background; an event committed by another
    process after the subscription's first read and before the LISTEN is in effect rings no
    doorbell. The ring sent once the LISTEN is in effect makes the subscription read it; take
    that ring out of Notifier._follow_watchers and this waits for the fallback poll (600 s)."""
    config = StoreConfig(poll_interval=600)
    async with (
        await EventStore.open(app_database_url, config=config, masker=SecretMasker()) as store,
        await EventStore.open(app_database_url, config=config, masker=SecretMasker()) as other,
    ):
        session = uuid.uuid4()
        await store.append(session, [Message(content="first")], expected_seq=0)
        # Keep the listening connection busy, so the LISTEN waits until the append is in.
        async with store.notifier._in_use:
            stream = store.subscribe(session)
            assert [e.seq for e in await take(stream, 1, timeout=5)] == [1]
            reading = asyncio.create_task(take(stream, 1, timeout=5))
            await asyncio.sleep(0.2)  # the subscription has read the table and waits
            assert not store.notifier.listening
            await other.append(session, [Message(content="second")], expected_seq=1)
        assert [e.seq for e in await reading] == [2]
        await stream.aclose()
