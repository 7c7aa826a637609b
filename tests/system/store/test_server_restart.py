"""A PostgreSQL restart loses and repeats nothing for subscribers (a server of its own)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from app.events import Message
from app.store import EventStore, migrate
from app.store.embedded import EmbeddedPostgres
from tests.support.subscriptions import nothing_more, take
from tests.support.waiting import until


@pytest.fixture
def own_server(data_dir: Path) -> Iterator[tuple[EmbeddedPostgres, str]]:
    """Not under tmp_path: pytest makes its root 0700 whenever a session starts, and the
    server's user (as root) could no longer reach its data dir to restart (data_dir's doc)."""
    server = EmbeddedPostgres(data_dir)
    url = server.start()
    migrate.upgrade(url)
    try:
        yield server, url
    finally:
        server.stop()


@pytest.mark.slow
async def test_subscriptions_survive_server_restart(
    own_server: tuple[EmbeddedPostgres, str], tmp_path: Path
) -> None:
    server, url = own_server
    settings = Settings(data_dir=tmp_path / "data", poll_interval=0.5)
    session = uuid.uuid4()
    async with await EventStore.open(url, config=settings.store, masker=settings.masker()) as store:
        stream = store.subscribe(session)
        everything = store.subscribe_all(name="restart-test")
        await store.append(session, [Message(content="before 1"), Message(content="before 2")])
        assert [e.seq for e in await take(stream, 2)] == [1, 2]
        assert [e.seq for e in await take(everything, 1)] == [1]

        await asyncio.to_thread(server.restart)

        # The pool's connections died with the server; append retries through that.
        await store.append(session, [Message(content="after 1")])
        await store.append(session, [Message(content="after 2")])
        assert [e.seq for e in await take(stream, 2)] == [3, 4]
        assert [e.seq for e in await take(everything, 3)] == [2, 3, 4]
        # The notifier tells no one it reconnected: its counter is looked at.
        await until(
            lambda: store.notifier.connections_made >= 2,
            timeout=15,
            what="the listening connection re-established",
        )
        await store.append(session, [Message(content="after reconnect")])
        assert [e.seq for e in await take(stream, 1)] == [5]
        assert [e.seq for e in await take(everything, 1)] == [5]
        assert await nothing_more(stream) and await nothing_more(everything)
        assert (await store.verify(session)).ok
