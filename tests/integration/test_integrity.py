"""The database enforces append-only; verify catches tampering at the right seq."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from app.events import Message
from app.store import EventStore


async def _tamper(store: EventStore, statement: str, *args: object) -> None:
    """What a superuser can do: switch the append-only trigger off, change rows, switch it on."""
    async with store.pool.acquire() as connection, connection.transaction():
        await connection.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        await connection.execute(statement, *args)
        await connection.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")


async def _session_with(store: EventStore, n: int) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [Message(content=f"m{i}") for i in range(1, n + 1)])
    return session


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET payload = '{}'::jsonb",
        "DELETE FROM events",
        "TRUNCATE events",
    ],
)
async def test_append_only_trigger_refuses_changes(store: EventStore, statement: str) -> None:
    await _session_with(store, 2)
    with pytest.raises(asyncpg.PostgresError, match="append-only") as raised:
        await store.pool.execute(statement)
    assert raised.value.sqlstate == "CR002"
    assert await store.pool.fetchval("SELECT count(*) FROM events") == 2


async def test_verify_accepts_an_intact_chain(store: EventStore) -> None:
    session = await _session_with(store, 5)
    report = await store.verify(session)
    assert report.ok and report.checked == 5 and report.first_bad_seq is None


async def test_verify_pages_through_long_sessions(store: EventStore) -> None:
    session = await _session_with(store, 25)
    report = await store.verify(session, page_size=7)
    assert report.ok and report.checked == 25


async def test_tampered_payload_is_caught_at_its_seq(store: EventStore) -> None:
    session = await _session_with(store, 5)
    await _tamper(
        store,
        """UPDATE events SET payload = '{"content": "forged"}' WHERE session_id = $1 AND seq = 3""",
        session,
    )
    report = await store.verify(session)
    assert not report.ok
    assert report.first_bad_seq == 3
    assert report.checked == 2


async def test_deleted_tail_is_caught(store: EventStore) -> None:
    session = await _session_with(store, 4)
    await _tamper(store, "DELETE FROM events WHERE session_id = $1 AND seq = 4", session)
    report = await store.verify(session)
    assert not report.ok and report.first_bad_seq == 4


async def test_deleted_middle_is_caught(store: EventStore) -> None:
    session = await _session_with(store, 4)
    await _tamper(store, "DELETE FROM events WHERE session_id = $1 AND seq = 2", session)
    report = await store.verify(session)
    assert not report.ok and report.first_bad_seq == 2


async def test_app_role_can_append_and_read_but_not_change(
    store: EventStore, database_url: str, settings
) -> None:
    login = f"app_{uuid.uuid4().hex[:8]}"
    await store.pool.execute(f"CREATE ROLE {login} LOGIN IN ROLE chronicle_app")
    try:
        app_url = database_url.replace("postgres@", f"{login}@", 1).replace(
            "postgres:@", f"{login}:@", 1
        )
        assert login in app_url
        async with await EventStore.open(app_url, settings=settings) as app_store:
            session = uuid.uuid4()
            await app_store.append(session, [Message(content="as app")])
            assert len(await app_store.read(session)) == 1
            for statement in ("UPDATE events SET kind = 'x'", "DELETE FROM events"):
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await app_store.pool.execute(statement)
    finally:
        await store.pool.execute(f"DROP OWNED BY {login}")
        await store.pool.execute(f"DROP ROLE {login}")
