"""The platform audit log in PostgreSQL: a chained stream of its own that verify checks,
that a superuser's edit breaks, that the analyst reads as ``platform_audit``, and that no
session list or session view shows."""

from __future__ import annotations

import asyncio
import importlib.util
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.events import Message, SessionCreated
from app.events.platform_audit import PLATFORM_LOG_ID
from app.projections import SessionState, bring_up_to_date
from app.sessions import platform_audit
from app.sessions.platform_audit import Actor, AdminReads
from app.sessions.sql.platform_audit import read_audit
from app.sessions.sql.session_owners import record_owner
from app.sessions.sql.users import Principal, add_user, create_token
from app.store import EventStore
from app.store.analytics import run_query
from tests.support.analyst_login import analyst_login
from tests.support.postgres import ServerAddress

ROOT = Path(__file__).resolve().parents[3]
HOST = Actor(name="cli:operator", via="cli")


@pytest.fixture
async def owner(database_url: str, settings) -> AsyncIterator[EventStore]:
    """The database's superuser: an owner login, as the CLI's users and tokens commands are
    (and the attacker who edits rows behind the log's back)."""
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as opened:
        yield opened


async def _principal(owner: EventStore, name: str, *, admin: bool) -> Principal:
    user = await add_user(owner, name, is_admin=admin)
    info, _ = await create_token(owner, user.id)
    return Principal(
        user_id=user.id, name=name, is_admin=admin, token_id=info.id, token_kind="api",
        expires_at=None,
    )  # fmt: skip


async def test_records_chain_in_a_stream_of_their_own_and_verify(
    store: EventStore, owner: EventStore
) -> None:
    user = await add_user(owner, "ann")
    info, token = await create_token(owner, user.id, label="laptop")
    await platform_audit.token_created(store, HOST, info)
    await platform_audit.user_changed(store, HOST, "ann", "added", is_admin=False)
    await platform_audit.token_revoked(store, HOST, info.id, "ann")

    log = await store.read(PLATFORM_LOG_ID)
    assert [e.kind for e in log] == [
        "session.created",
        "audit.token_created",
        "audit.user_changed",
        "audit.token_revoked",
    ]
    created = log[0].event()
    assert isinstance(created, SessionCreated) and created.config.stored() == {"platform_log": True}
    assert log[1].payload["token_id"] == str(info.id) and log[1].payload["owner"] == "ann"
    assert log[1].payload["actor"] == "cli:operator" and log[1].payload["via"] == "cli"
    assert token not in str([e.payload for e in log])
    assert [e.kind for e in await read_audit(store)] == [e.kind for e in log[1:]]
    report = await store.verify(PLATFORM_LOG_ID)
    assert report.ok and report.checked == 4


async def test_processes_creating_the_log_at_once_create_it_once(store: EventStore) -> None:
    await asyncio.gather(
        *(platform_audit.user_changed(store, HOST, f"u{i}", "added") for i in range(8))
    )
    log = await store.read(PLATFORM_LOG_ID)
    assert [e.kind for e in log].count("session.created") == 1 and len(log) == 9
    assert (await store.verify(PLATFORM_LOG_ID)).ok


async def test_a_superusers_edit_of_an_audit_record_fails_verify(
    store: EventStore, owner: EventStore
) -> None:
    """Erasing who got a token (the chain not recomputed: it cannot be without the anchor's
    key going unnoticed, see test_tampering) is found."""
    user = await add_user(owner, "bob")
    info, _ = await create_token(owner, user.id)
    await platform_audit.token_created(store, HOST, info)
    await platform_audit.logged_in(
        store, Actor("bob", "api", "203.0.113.9"), uuid.uuid4(), token_id=info.id, expires_at=None
    )
    assert (await store.verify(PLATFORM_LOG_ID)).ok
    async with owner.pool.acquire() as connection, connection.transaction():
        await connection.execute("SET LOCAL session_replication_role = replica")
        await connection.execute(
            "UPDATE events SET payload = jsonb_set(payload, '{address}', '\"10.0.0.1\"') "
            "WHERE session_id = $1 AND kind = 'audit.login'",
            PLATFORM_LOG_ID,
        )
    report = await store.verify(PLATFORM_LOG_ID)
    assert not report.ok and report.first_bad_seq == 3


async def test_an_admins_reads_of_another_users_session_are_recorded_once_an_hour(
    store: EventStore, owner: EventStore
) -> None:
    admin = await _principal(owner, "root", admin=True)
    member = await _principal(owner, "cat", admin=False)
    theirs, mine, host_only = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for session in (theirs, mine, host_only):
        await store.append(session, [Message(content="hi")])
    await record_owner(store, theirs, member.user_id)
    await record_owner(store, mine, admin.user_id)

    reads = AdminReads()
    for _ in range(3):
        await asyncio.gather(
            *(reads.read(store, admin, s, "198.51.100.7") for s in (theirs, mine, host_only))
        )
    [read] = await read_audit(store)
    assert read.kind == "audit.session_read"
    assert read.payload["session_id"] == str(theirs) and read.payload["owner"] == "cat"
    assert (read.payload["actor"], read.payload["address"]) == ("root", "198.51.100.7")
    assert read.payload["token_id"] == str(admin.token_id)

    later = AdminReads(window=0)  # the window passed
    await later.read(store, admin, theirs, "198.51.100.7")
    assert [e.kind for e in await read_audit(store)] == ["audit.session_read"] * 2


async def test_a_fork_or_replay_is_recorded_when_its_source_is_another_users(
    store: EventStore, owner: EventStore
) -> None:
    admin = await _principal(owner, "ops", admin=True)
    member = await _principal(owner, "eli", admin=False)
    theirs, mine = uuid.uuid4(), uuid.uuid4()
    await record_owner(store, theirs, member.user_id)
    await record_owner(store, mine, admin.user_id)
    actor = Actor("ops", "api", "192.0.2.1")
    replay, fork = uuid.uuid4(), uuid.uuid4()
    for started, new, source in (("replay", replay, theirs), ("fork", fork, mine)):
        await platform_audit.session_started(
            store, actor, started, session_id=new, source_session=source, principal=admin
        )
    [record] = await read_audit(store)  # the fork of the admin's own session is no one else's
    assert record.kind == "audit.replay_started"
    assert (record.payload["session_id"], record.payload["source_session"]) == (
        str(replay),
        str(theirs),
    )
    assert (record.payload["owner"], record.payload["address"]) == ("eli", "192.0.2.1")


async def test_the_log_is_no_session_in_the_list_or_the_session_views(
    store: EventStore, database_url: str, pg_address: ServerAddress
) -> None:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="real work"), Message(content="go")])
    await platform_audit.user_changed(store, HOST, "dee", "added", is_admin=True)
    await bring_up_to_date(store, SessionState())
    async with store.pool.acquire() as connection:
        listed = await connection.fetch("SELECT session_id FROM session_state")
    assert [row["session_id"] for row in listed] == [session]
    with analyst_login(database_url, pg_address) as url:
        costs = await run_query(url, "SELECT session_id FROM session_costs")
        audit = await run_query(
            url, "SELECT kind, actor, via, subject, change FROM platform_audit ORDER BY seq"
        )
    assert [row[0] for row in costs.rows] == [session]
    assert audit.rows == [("audit.user_changed", "cli:operator", "cli", "dee", "added")]


def _documented_query() -> str:
    """The query docs/analytics.md gives under the platform_audit view."""
    text = (ROOT / "docs" / "analytics.md").read_text(encoding="utf-8")
    section = text[text.index("### `platform_audit`") :]
    return section.split("```sql\n", 1)[1].split("```", 1)[0]


async def test_the_documented_query_finds_an_admins_read(
    store: EventStore, owner: EventStore, database_url: str, pg_address: ServerAddress
) -> None:
    admin = await _principal(owner, "ada", admin=True)
    member = await _principal(owner, "ben", admin=False)
    session = uuid.uuid4()
    await store.append(session, [Message(content="hi")])
    await record_owner(store, session, member.user_id)
    await AdminReads().read(store, admin, session, "203.0.113.5")
    with analyst_login(database_url, pg_address) as url:
        found = await run_query(url, _documented_query())
    assert [row[1:] for row in found.rows] == [("ada", "203.0.113.5", "ben", str(session))]


def test_the_migrations_platform_log_id_is_the_protocols() -> None:
    path = ROOT / "migrations" / "versions" / "0016_platform_audit.py"
    spec = importlib.util.spec_from_file_location("migration_0016", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.PLATFORM_LOG_ID == str(PLATFORM_LOG_ID)
