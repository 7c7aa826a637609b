"""What only the PostgreSQL store does at its edges: the ``sessions`` row its appends keep,
and opening a database without Chronicle's schema or a server that is not there."""

from __future__ import annotations

import uuid

import pytest

from app.config import Settings
from app.events import Message
from app.store import DatabaseUnavailableError, EventStore
from tests.support.postgres import ServerAddress, database_from_template


async def test_sessions_row_created_with_first_event(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content="a")])
    await store.append(session, [Message(content="b")])
    row = await store.pool.fetchrow(
        "SELECT last_seq, created_at FROM sessions WHERE id=$1", session
    )
    assert row["last_seq"] == 2


async def test_open_reports_missing_schema(pg_address: ServerAddress, settings: Settings) -> None:
    for url in database_from_template(pg_address, "template1", f"t_{uuid.uuid4().hex[:12]}"):
        with pytest.raises(Exception, match="chronicle db migrate"):
            await EventStore.open(url, config=settings.store, masker=settings.masker())


async def test_open_reports_unreachable_server(settings: Settings) -> None:
    with pytest.raises(DatabaseUnavailableError, match="cannot connect"):
        await EventStore.open(
            "postgresql://nobody@127.0.0.1:1/none",
            config=settings.store,
            masker=settings.masker(),
        )
