"""The database enforces append-only; verify catches tampering at the right seq."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from app.events import Message
from app.store import EventStore
from app.store.records import RecordedEvent


async def _tamper(superuser: asyncpg.Connection, statement: str, *args: object) -> None:
    """What a superuser can do: switch the append-only trigger off, change rows, switch it on."""
    async with superuser.transaction():
        await superuser.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        await superuser.execute(statement, *args)
        await superuser.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")


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
async def test_append_only_trigger_refuses_changes(
    store: EventStore, superuser: asyncpg.Connection, statement: str
) -> None:
    """Even the owner or a superuser cannot change events without disabling the trigger."""
    await _session_with(store, 2)
    with pytest.raises(asyncpg.PostgresError, match="append-only") as raised:
        await superuser.execute(statement)
    assert raised.value.sqlstate == "CR002"
    assert await store.pool.fetchval("SELECT count(*) FROM events") == 2


async def test_tampered_payload_is_caught_at_its_seq(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    session = await _session_with(store, 5)
    await _tamper(
        superuser,
        """UPDATE events SET payload = '{"content": "forged"}' WHERE session_id = $1 AND seq = 3""",
        session,
    )
    report = await store.verify(session)
    assert not report.ok
    assert report.first_bad_seq == 3
    assert report.checked == 2


async def test_deleted_tail_is_caught(store: EventStore, superuser: asyncpg.Connection) -> None:
    session = await _session_with(store, 4)
    await _tamper(superuser, "DELETE FROM events WHERE session_id = $1 AND seq = 4", session)
    report = await store.verify(session)
    assert not report.ok and report.first_bad_seq == 4


async def test_deleted_middle_is_caught(store: EventStore, superuser: asyncpg.Connection) -> None:
    session = await _session_with(store, 4)
    await _tamper(superuser, "DELETE FROM events WHERE session_id = $1 AND seq = 2", session)
    report = await store.verify(session)
    assert not report.ok and report.first_bad_seq == 2


async def test_app_role_can_append_and_read_but_not_change(store: EventStore) -> None:
    """The store fixture logs in as chronicle_app: it appends and reads, never changes."""
    assert await store.pool.fetchval("SELECT current_user") != "postgres"
    session = uuid.uuid4()
    await store.append(session, [Message(content="as app")])
    assert len(await store.read(session)) == 1
    for statement in ("UPDATE events SET kind = 'x'", "DELETE FROM events", "TRUNCATE events"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await store.pool.execute(statement)


async def test_a_session_growing_while_it_is_verified_is_intact(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event appended after the log was read and before the head is read (a live session,
    as the web page verifies it) is read on to, not reported as a head past the log's end.
    Without the catch-up this reported "the session head says seq 4 but the log ends at 3"."""
    session = await _session_with(store, 3)
    read = store.read
    appended = 0

    async def read_then_append(
        session_id: uuid.UUID, after_seq: int = 0, limit: int | None = None, **kwargs: bool
    ) -> list[RecordedEvent]:
        nonlocal appended
        page = await read(session_id, after_seq, limit, **kwargs)
        # after the last page, twice: the catch-up itself may be overtaken
        if len(page) < (limit or 0) and appended < 2:
            appended += 1
            await store.append(session, [Message(content=f"late {appended}")])
        return page

    monkeypatch.setattr(store, "read", read_then_append)
    report = await store.verify(session, page_size=2)
    assert report.ok, report.reason
    assert report.checked == 5


async def test_a_head_that_stays_past_the_log_is_still_caught(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    """The catch-up gives up when no new event comes: a head moved past the log (or a tail
    removed with the head left alone) is reported, as before."""
    session = await _session_with(store, 3)
    await superuser.execute("UPDATE sessions SET last_seq = 9 WHERE id = $1", session)
    report = await store.verify(session)
    assert not report.ok and "head says seq 9 but the log ends at 3" in (report.reason or "")
