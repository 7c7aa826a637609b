"""A process's own appends ring its watchers once, with their events; their NOTIFYs are for
other processes.

Before, the NOTIFY of an append sent in its own transaction came back on the process's
listening connection and rang the session's watchers with a seq and no events; heard before
the append's answer, it made a waiting subscriber read the table for the events the append
was about to hand it (issue 9's seventh pass: 0.4-1 such reads a controller step). The
notifier now ignores notifications sent by the store's own append connections; the places
where the store's own ring could be missing (a re-sent batch found already recorded, an
append that failed or was cancelled with an unknown outcome) ring instead.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest

from app.events import Message
from app.events.masking import SecretMasker
from app.store import EventStore
from app.store.buffered_session import BufferedSession
from app.store.config import StoreConfig
from app.store.notifier import CHANNEL, Notifier
from tests.support.subscriptions import take
from tests.support.waiting import until


async def test_a_notification_from_an_own_append_connection_rings_nobody(
    app_database_url: str,
) -> None:
    """Deterministic: notifications arrive in commit order, so once the second one (from
    another backend) has rung, the first (from an ignored backend) has been heard too.
    Without the pid check in ``Notifier._on_notification`` ``ours`` is rung with seq 5."""
    notifier = Notifier(lambda: asyncpg.connect(app_database_url), keepalive=600)
    own = await asyncpg.connect(app_database_url)
    other = await asyncpg.connect(app_database_url)
    try:
        await notifier.start()
        notifier.ignore_senders({own.get_server_pid()})
        ours, theirs = notifier.watch("ours"), notifier.watch("theirs")
        await until(lambda: notifier.listening, timeout=5, what="LISTEN")
        await asyncio.sleep(0)  # the ring sent once the LISTEN is in effect
        ours.clear()
        theirs.clear()
        await own.execute(f"SELECT pg_notify('{CHANNEL}', 'ours:5')")
        await other.execute(f"SELECT pg_notify('{CHANNEL}', 'theirs:7')")
        await until(lambda: theirs.latest_seq == 7, timeout=5, what="the other backend's ring")
        assert notifier.notifications_heard == 2
        assert ours.latest_seq == 0
        assert not await ours.wait(0.05)
    finally:
        await notifier.close()
        await own.close()
        await other.close()


async def test_a_subscriber_waiting_on_its_own_process_appends_never_reads(
    app_database_url: str, database_url: str
) -> None:
    """A subscriber waits while another task of the process appends (the controller waiting
    for the executor's observation): every event comes from the append, none from a read,
    and another process still hears every append. Each append's answer is held 20 ms after
    the database call, so its NOTIFY is always heard first (in the benchmark's loop it was
    heard first in 40-100% of the steps): before this change the 20 appends below made the
    subscriber read the table 37-39 times."""
    # No fallback poll within the test: it would read the table.
    async with await EventStore.open(
        app_database_url, config=StoreConfig(poll_interval=600), masker=SecretMasker()
    ) as store:
        await _appends_while_waiting(store, database_url)


async def test_a_buffered_session_over_the_store_keeps_its_notifications_ignored(
    app_database_url: str, database_url: str
) -> None:
    """A ``BufferedSession`` (a replay's store) shares its store's notifier and writes
    through the store: making one must not hand the notifier its own (empty) set of append
    backends. With the registration in ``EventStore.__init__`` this read the table again."""
    async with await EventStore.open(
        app_database_url, config=StoreConfig(poll_interval=600), masker=SecretMasker()
    ) as store:
        BufferedSession(store, uuid.uuid4())
        await _appends_while_waiting(store, database_url)


async def _appends_while_waiting(store: EventStore, database_url: str) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content="0")], expected_seq=0)
    heard_elsewhere: asyncio.Queue[str] = asyncio.Queue()
    outside = await asyncpg.connect(database_url)
    await outside.add_listener(CHANNEL, lambda *args: heard_elsewhere.put_nowait(args[-1]))
    reads = 0
    read = store.read
    append = store._coalescer.append

    async def answered_late(*args: Any, **kwargs: Any) -> Any:
        result = await append(*args, **kwargs)
        await asyncio.sleep(0.02)  # its NOTIFY arrives meanwhile
        return result

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        return await read(*args, **kwargs)

    try:
        async with store.subscribe(session) as stream:
            assert [e.seq for e in await take(stream, 1, timeout=5)] == [1]
            await until(lambda: store.notifier.listening, timeout=5, what="LISTEN")
            # The ring sent once the LISTEN is in effect makes the next wait read: let it.
            await store.append(session, [Message(content="1")], expected_seq=1)
            assert [e.seq for e in await take(stream, 1, timeout=5)] == [2]
            store.read = counted  # type: ignore[method-assign]
            store._coalescer.append = answered_late  # type: ignore[method-assign]
            for seq in range(2, 22):
                waiting = asyncio.create_task(take(stream, 1, timeout=5))
                await asyncio.sleep(0)  # the subscriber waits for its doorbell
                await store.append(session, [Message(content=str(seq))], expected_seq=seq)
                assert [e.seq for e in await waiting] == [seq + 1]
            await until(
                lambda: store.notifier.notifications_heard >= 21, timeout=5, what="own NOTIFYs"
            )
            await asyncio.sleep(0.05)
            assert reads == 0
        async with asyncio.timeout(5):
            assert [await heard_elsewhere.get() for _ in range(21)][-1] == f"{session}:22"
    finally:
        await outside.close()


async def test_a_resent_batch_found_recorded_rings_with_its_events(store: EventStore) -> None:
    """The re-send of a batch whose first answer was lost returns the recorded events; it
    rings this process's watchers with them (the first send's NOTIFY rings nobody here).
    Before, nothing rang: the watcher's doorbell stayed silent."""
    session = uuid.uuid4()
    message = Message(content="once")
    [recorded] = await store.append(session, [message])
    wakeup = store.notifier.watch(str(session))
    try:
        await asyncio.sleep(0.1)
        wakeup.clear()
        assert await store.append(session, [message]) == [recorded]
        assert wakeup.latest_seq == 1
        assert wakeup.take_offered(0) == [recorded]
    finally:
        store.notifier.unwatch(str(session), wakeup)


@pytest.mark.parametrize("when", ["connecting", "in flight"])
async def test_an_append_cancelled_midway_makes_the_watchers_read(
    store: EventStore, when: str
) -> None:
    """A cancelled append may have committed; its own NOTIFY rings nobody here, so the
    session's watchers are told to read the table. Before, nothing rang them."""
    session = uuid.uuid4()
    if when == "in flight":  # an append connection is open and idle: the call goes out at once
        await store.append(uuid.uuid4(), [Message(content="warm")])
    wakeup = store.notifier.watch(str(session))
    try:
        await asyncio.sleep(0.1)
        wakeup.clear()
        appending = asyncio.create_task(store.append(session, [Message(content="maybe")]))
        await asyncio.sleep(0)  # inside the store's call to the database
        appending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await appending
        assert wakeup.must_read
        assert await wakeup.wait(0)
    finally:
        store.notifier.unwatch(str(session), wakeup)
