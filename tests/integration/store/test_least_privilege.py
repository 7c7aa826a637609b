"""chronicle_app, the application's login, can append and read through the owner's functions
and nothing else.

Before migration 0003 chronicle_app held INSERT on events and llm_messages and INSERT/UPDATE on
sessions, so every direct write below succeeded: a backdated event with a valid chain, a stray
row that blocked the session, a prompt message stored under a hash it does not have.
"""

from __future__ import annotations

import hashlib
import uuid

import asyncpg
import pytest

from app.events import Message
from app.events.canonical import canonical_json
from app.store import ContentMismatchError, EventStore


def _sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


async def test_the_store_logs_in_as_the_application(app_login: asyncpg.Connection) -> None:
    row = await app_login.fetchrow(
        "SELECT current_user, rolsuper, pg_has_role('chronicle_owner', 'USAGE') AS owner "
        "FROM pg_roles WHERE rolname = current_user"
    )
    assert row["current_user"] != "postgres" and not row["rolsuper"] and not row["owner"]
    assert await app_login.fetchval("SELECT pg_has_role('chronicle_app', 'USAGE')")


@pytest.mark.parametrize(
    "statement",
    [
        # A backdated event with any hash: no INSERT on events at all.
        "INSERT INTO events (session_id, seq, event_id, kind, source, payload, created_at, hash) "
        "VALUES ($1, 1, gen_random_uuid(), 'message', 'user', '{}', '2000-01-01', "
        "sha256('x'::bytea))",
        "UPDATE sessions SET last_seq = 0 WHERE id = $1",
        "INSERT INTO sessions (id, last_seq, last_hash) VALUES ($1, 9, '\\x00')",
        "DELETE FROM sessions WHERE id = $1",
        "INSERT INTO llm_messages (hash, message) "
        "SELECT sha256(convert_to($1::uuid::text, 'UTF8')), '{}'",
    ],
)
async def test_direct_writes_are_refused(
    store: EventStore, app_login: asyncpg.Connection, statement: str
) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content="first")])
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="permission denied"):
        await app_login.execute(statement, session)
    # The session is intact and still takes appends.
    recorded = await store.append(session, [Message(content="second")], expected_seq=1)
    assert recorded[0].seq == 2 and (await store.verify(session)).ok


async def test_prompt_messages_are_stored_only_under_their_own_hash(
    store: EventStore, app_login: asyncpg.Connection
) -> None:
    text = canonical_json({"role": "user", "content": "hello"})
    other = canonical_json({"role": "user", "content": "goodbye"})
    with pytest.raises(asyncpg.PostgresError, match="message 1 of 1 does not match") as raised:
        await app_login.fetchval(
            "SELECT chronicle_put_messages($1::bytea[], $2::text[])", [_sha256(text)], [other]
        )
    assert raised.value.sqlstate == "CR004"
    with pytest.raises(ContentMismatchError, match="message 2 of 2 does not match"):
        await store.put_messages([_sha256(text).hex(), _sha256(text).hex()], [text, other])
    assert await store.pool.fetchval("SELECT count(*) FROM llm_messages") == 0

    assert await store.put_messages([_sha256(text).hex()], [text]) == 1
    assert await store.put_messages([_sha256(text).hex()], [text]) == 0  # stored once
    stored = await store.pool.fetchval("SELECT message FROM llm_messages")
    assert stored == {"role": "user", "content": "hello"}


async def test_checkpoints_are_the_applications_own(app_login: asyncpg.Connection) -> None:
    await app_login.execute(
        "INSERT INTO checkpoints (name, tx, global_position) VALUES ('mine', '1', 1)"
    )
    await app_login.execute("UPDATE checkpoints SET global_position = 2 WHERE name = 'mine'")
    await app_login.execute("DELETE FROM checkpoints WHERE name = 'mine'")


async def test_the_application_cannot_create_objects_its_functions_could_pick_up(
    app_login: asyncpg.Connection,
) -> None:
    """The writers run as the owner with search_path pg_catalog, <schema>: nothing chronicle_app
    creates may shadow what they call."""
    for statement in (
        "CREATE FUNCTION sha256(text) RETURNS bytea LANGUAGE sql AS 'SELECT NULL::bytea'",
        "CREATE TABLE sessions_shadow (id uuid)",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_login.execute(statement)


async def test_the_writers_run_as_the_owner_with_a_pinned_search_path(
    superuser: asyncpg.Connection,
) -> None:
    rows = await superuser.fetch(
        "SELECT p.proname, pg_get_userbyid(p.proowner) AS owner, p.prosecdef, p.proconfig "
        "FROM pg_proc p WHERE p.proname IN "
        "('chronicle_append', 'chronicle_append_one', 'chronicle_append_many', "
        "'chronicle_put_messages')"
    )
    assert {row["proname"] for row in rows} == {
        "chronicle_append",
        "chronicle_append_one",
        "chronicle_append_many",
        "chronicle_put_messages",
    }
    for row in rows:
        assert row["owner"] == "chronicle_owner" and row["prosecdef"], row["proname"]
        assert row["proconfig"] == ["search_path=pg_catalog, public, pg_temp"], row["proname"]
    owners = await superuser.fetch(
        "SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public' "
        "AND tablename IN ('events', 'sessions', 'checkpoints', 'llm_messages')"
    )
    assert {row["tableowner"] for row in owners} == {"chronicle_owner"} and len(owners) == 4
    assert not await superuser.fetchval(
        "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'chronicle_owner'"
    )


async def test_a_login_outside_chronicle_app_cannot_append(
    superuser: asyncpg.Connection, app_database_url: str
) -> None:
    """Functions are executable by everyone unless revoked: only chronicle_app may append."""
    login = f"stranger_{uuid.uuid4().hex[:8]}"
    await superuser.execute(f"CREATE ROLE {login} LOGIN PASSWORD 'stranger-password'")
    try:
        url = app_database_url.replace(
            app_database_url.split("://", 1)[1].split("@", 1)[0],
            f"{login}:stranger-password",
        )
        stranger = await asyncpg.connect(url)
        try:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await stranger.fetch(
                    "SELECT * FROM chronicle_append($1, NULL, $2, '{message}', '{user}', "
                    "'{NULL}', '{\"{}\"}', '{1}')",
                    uuid.uuid4(),
                    [uuid.uuid4()],
                )
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await stranger.fetch(
                    "SELECT * FROM chronicle_append_one($1, NULL, $2, 'message', 'user', "
                    "NULL, '{}', 1::smallint)",
                    uuid.uuid4(),
                    uuid.uuid4(),
                )
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await stranger.fetch("SELECT * FROM events")
        finally:
            await stranger.close()
    finally:
        await superuser.execute(f"DROP ROLE {login}")
