"""One round trip per single-event append, counted on the wire.

Every message the store's connections send to PostgreSQL passes through a proxy that counts
the messages a client waits on: ``Sync`` (the end of an extended-protocol exchange) and
``Query`` (a simple-protocol one). Each is one round trip.

Before chronicle_append_one (migration 0007) and the append connections of
app/store/coalescer.py, a lone append cost two: ``chronicle_append(..., p_notify => false)``,
then the NOTIFY sent after the commit on the listening connection (40 for the 20 appends
below). Wake-ups for other processes must survive the change: a listener outside the store
still gets exactly one notification per append, alone or concurrent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import struct
import uuid
from collections.abc import AsyncIterator

import asyncpg

from app.events import Message
from app.events.canonical import canonical_json
from app.events.masking import SecretMasker
from app.store import EventStore
from app.store.config import StoreConfig
from tests.support.postgres import ServerAddress, database_name

#: Frontend messages after which the client waits for the server: one round trip each.
WAITS_FOR_SERVER = (b"S", b"Q")


class CountingProxy:
    """A TCP proxy to the test server that counts the round trips clients start."""

    def __init__(self, upstream: ServerAddress) -> None:
        self.upstream = upstream
        self.round_trips = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _open_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.upstream.host.startswith("/"):
            path = f"{self.upstream.host}/.s.PGSQL.{self.upstream.port}"
            return await asyncio.open_unix_connection(path)
        return await asyncio.open_connection(self.upstream.host, self.upstream.port)

    async def _serve(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        server, to_server = await self._open_upstream()
        tasks = [
            asyncio.create_task(self._client_to_server(client, to_server)),
            asyncio.create_task(_pipe(server, to_client)),
        ]
        self._tasks.update(tasks)
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        to_client.close()
        to_server.close()

    async def _client_to_server(
        self, client: asyncio.StreamReader, to_server: asyncio.StreamWriter
    ) -> None:
        # The startup message has no type byte (sslmode=disable: no SSLRequest before it).
        (length,) = struct.unpack("!i", await client.readexactly(4))
        to_server.write(struct.pack("!i", length) + await client.readexactly(length - 4))
        while True:
            kind = await client.readexactly(1)
            (length,) = struct.unpack("!i", await client.readexactly(4))
            body = await client.readexactly(length - 4)
            if kind in WAITS_FOR_SERVER:
                self.round_trips += 1
            to_server.write(kind + struct.pack("!i", length) + body)
            await to_server.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()


@contextlib.asynccontextmanager
async def _store_through_proxy(
    app_database_url: str,
) -> AsyncIterator[tuple[EventStore, CountingProxy]]:
    upstream = ServerAddress.from_url(app_database_url)
    proxy = CountingProxy(upstream)
    port = await proxy.start()
    through = ServerAddress("127.0.0.1", port, upstream.user, upstream.password)
    url = through.url(database_name(app_database_url)) + "?sslmode=disable"
    # No keepalive or fallback poll during the test: only appends talk to the server.
    config = StoreConfig(poll_interval=600)
    try:
        async with await EventStore.open(url, config=config, masker=SecretMasker()) as store:
            yield store, proxy
    finally:
        await proxy.close()


async def _listening(app_database_url: str, received: asyncio.Queue[str]) -> asyncpg.Connection:
    """A connection outside the store listening as another process's notifier does."""
    listener = await asyncpg.connect(app_database_url)
    await listener.add_listener("chronicle_events", lambda *args: received.put_nowait(args[-1]))
    return listener


async def _take(received: asyncio.Queue[str], count: int) -> list[str]:
    taken = [await asyncio.wait_for(received.get(), 5) for _ in range(count)]
    await asyncio.sleep(0.2)
    assert received.empty(), "one notification per append, no more"
    return taken


async def test_a_lone_single_event_append_is_one_round_trip(app_database_url: str) -> None:
    received: asyncio.Queue[str] = asyncio.Queue()
    listener = await _listening(app_database_url, received)
    try:
        async with _store_through_proxy(app_database_url) as (store, proxy):
            session = uuid.uuid4()
            # Warm-up: the first call of a statement prepares it (one more round trip).
            await store.append(session, [Message(content="warm")], expected_seq=0)
            await store.append(session, [Message(content="warm")], expected_seq=1)
            await asyncio.sleep(0.2)
            before = proxy.round_trips
            for seq in range(2, 22):
                await store.append(session, [Message(content=str(seq))], expected_seq=seq)
            await asyncio.sleep(0.3)  # a NOTIFY sent after the commit would be counted here
            assert proxy.round_trips - before == 20
            assert [e.seq for e in await store.read(session)] == list(range(1, 23))
            assert (await store.verify(session)).ok
        # Other processes are still woken: one notification per append, in order.
        assert await _take(received, 22) == [f"{session}:{seq}" for seq in range(1, 23)]
    finally:
        await listener.close()


async def test_concurrent_appends_each_wake_other_processes_once(app_database_url: str) -> None:
    """Appends in flight together leave the NOTIFY to after their commits (no lock shared by
    their commits); each still announces itself exactly once."""
    received: asyncio.Queue[str] = asyncio.Queue()
    listener = await _listening(app_database_url, received)
    sessions = [uuid.uuid4() for _ in range(8)]
    try:
        async with _store_through_proxy(app_database_url) as (store, _proxy):
            for seq in range(5):
                await asyncio.gather(
                    *(store.append(s, [Message(content="m")], expected_seq=seq) for s in sessions)
                )
        expected = {f"{s}:{seq}" for s in sessions for seq in range(1, 6)}
        assert sorted(await _take(received, len(expected))) == sorted(expected)
    finally:
        await listener.close()


async def test_an_append_with_its_prompt_messages_is_one_round_trip(
    app_database_url: str,
) -> None:
    """A model step's llm.call and the prompt messages it names: before, ``put_messages``
    then the append, two round trips a step (40 below); now one statement."""
    async with _store_through_proxy(app_database_url) as (store, proxy):
        session = uuid.uuid4()

        def messages(step: int) -> dict[str, str]:
            texts = [canonical_json({"role": "user", "content": f"{step}-{i}"}) for i in (0, 1)]
            return {hashlib.sha256(text.encode()).hexdigest(): text for text in texts}

        # Warm-up: the first call of each statement prepares it.
        await store.append(session, [Message(content="w")], expected_seq=0, messages=messages(0))

        def two() -> list[Message]:
            return [Message(content="a"), Message(content="b")]

        await store.append(session, two(), expected_seq=1, messages=messages(1))
        await asyncio.sleep(0.2)
        before = proxy.round_trips
        for step in range(10):  # one event, then a batch (a call and its actions)
            seq = 3 + 3 * step
            await store.append(
                session, [Message(content="c")], expected_seq=seq, messages=messages(2 * step + 2)
            )
            await store.append(
                session, two(), expected_seq=seq + 1, messages=messages(2 * step + 3)
            )
        await asyncio.sleep(0.3)
        assert proxy.round_trips - before == 20
        keys = [key for step in range(22) for key in messages(step)]
        assert len(await store.read_messages(keys)) == 44
