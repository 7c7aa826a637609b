"""chronicle_analyst reads the views and session_state, and nothing else — tested as an
attacker with the analyst's password and psql would try: on a raw connection, with the
transaction switched back to READ WRITE, so what stops each attempt is the role's privileges
and not the read-only default of `chronicle sql`.

Without migration 0006's grants (SELECT on the views only, no CREATE on the schema, no
EXECUTE of the owner's functions) the tables would be readable through PUBLIC's defaults
and the SECURITY DEFINER writers callable: each test here names what it would catch.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import asyncpg
import pytest
from pydantic import SecretStr

from app.config import Settings
from app.events import LlmCall, Message, Run, RunOutput, SessionCreated
from app.store import EventStore
from app.store.analytics import VIEWS, AnalystError, run_query

MODEL_KEY = "sk-analyst-must-never-see-" + uuid.uuid4().hex


@pytest.fixture
async def attacker(analyst_database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """The analyst's login on a raw connection, read-write transactions allowed."""
    connection = await asyncpg.connect(analyst_database_url)
    await connection.execute("SET default_transaction_read_only = off")
    try:
        yield connection
    finally:
        await connection.close()


async def _tables(superuser: asyncpg.Connection) -> list[str]:
    rows = await superuser.fetch(
        "SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = current_schema()"
    )
    return sorted(row["name"] for row in rows)


async def test_the_analyst_selects_every_view_and_session_state(analyst_database_url: str) -> None:
    for name in VIEWS:
        result = await run_query(analyst_database_url, f"SELECT * FROM {name} LIMIT 1")
        assert result.columns, name


async def test_no_table_of_the_log_is_readable(
    attacker: asyncpg.Connection, superuser: asyncpg.Connection
) -> None:
    """events, sessions, llm_messages (prompts), blobs, checkpoints, projections ... and any
    table a later migration adds: only session_state is granted."""
    tables = await _tables(superuser)
    assert {"events", "sessions", "llm_messages", "blobs", "checkpoints"} <= set(tables)
    for table in tables:
        if table == "session_state":
            await attacker.fetch("SELECT * FROM session_state LIMIT 1")
            continue
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await attacker.fetch(f"SELECT * FROM {table} LIMIT 1")


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO llm_calls (session_id, seq) VALUES (gen_random_uuid(), 1)",  # updatable view
        "UPDATE agent_states SET seq = seq + 1",
        "DELETE FROM llm_calls",
        "DELETE FROM session_state",
        "UPDATE session_state SET title = 'x'",
        "INSERT INTO events (session_id, seq) VALUES (gen_random_uuid(), 1)",
        "TRUNCATE session_state",
        "CREATE TABLE mine (x int)",
        "CREATE VIEW mine AS SELECT 1",
        "CREATE FUNCTION mine() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "ALTER VIEW llm_calls RENAME TO llm_calls_old",
        "DROP VIEW daily_usage",
        "CREATE OR REPLACE VIEW errors AS SELECT 1 AS x",
        "SET ROLE chronicle_app",
        "SET ROLE chronicle_owner",
        "GRANT SELECT ON events TO PUBLIC",
        "COPY (SELECT 1) TO '/tmp/chronicle-analyst-copy'",
        "SELECT pg_read_file('postgresql.conf')",
        "SELECT rolpassword FROM pg_authid",
    ],
)
async def test_the_analyst_changes_nothing(attacker: asyncpg.Connection, statement: str) -> None:
    async with attacker.transaction(readonly=False):
        before = await attacker.fetchval("SELECT count(*) FROM llm_calls")
    with pytest.raises((asyncpg.InsufficientPrivilegeError, asyncpg.WrongObjectTypeError)):
        async with attacker.transaction(readonly=False):
            await attacker.execute(statement)
    assert await attacker.fetchval("SELECT count(*) FROM llm_calls") == before


async def test_no_owner_function_is_executable(
    attacker: asyncpg.Connection, superuser: asyncpg.Connection
) -> None:
    """The SECURITY DEFINER writers (append, import, put blobs and messages) run with the
    owner's rights: the analyst must not be able to call any of them. The one it may call is
    the reader the usage views are built on (a view calls a function with its reader's
    rights), which PostgreSQL keeps from writing (STABLE) and which returns llm_calls' rows."""
    rows = await superuser.fetch(
        "SELECT p.oid::regprocedure::text AS signature, p.proname, p.pronargs, p.provolatile "
        "FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.prosecdef"
    )
    names = {row["proname"] for row in rows}
    assert {"chronicle_append", "chronicle_import", "chronicle_put_blobs"} <= names
    for row in rows:
        allowed = await attacker.fetchval(
            "SELECT has_function_privilege(current_user, $1, 'EXECUTE')", row["signature"]
        )
        if row["signature"] == "chronicle_usage_tail()":
            assert allowed is True and row["provolatile"] == b"s"
            continue
        assert allowed is False, row["signature"]
    with pytest.raises(asyncpg.PostgresError, match="not allowed in a non-volatile function"):
        await superuser.execute(
            "CREATE FUNCTION pg_temp.writes() RETURNS void LANGUAGE plpgsql STABLE AS "
            "$$ BEGIN DELETE FROM usage_rollup_sessions; END $$; SELECT pg_temp.writes()"
        )
    arguments = ", ".join(["NULL"] * 10)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await attacker.fetch(f"SELECT chronicle_import({arguments})")


async def test_the_model_key_is_nowhere_the_analyst_can_read(
    app_database_url: str, analyst_database_url: str, tmp_path
) -> None:
    """The log holds no secret (the masker replaces known ones before anything is recorded);
    every column of every view and of session_state, as text, is searched for the key."""
    settings = Settings(data_dir=tmp_path / "data", llm_api_key=SecretStr(MODEL_KEY))
    session = uuid.uuid4()
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=settings.masker()
    ) as store:
        await store.append(
            session,
            [
                SessionCreated(title=f"leak {MODEL_KEY}", config={"key": MODEL_KEY}),
                Message(content=f"my key is {MODEL_KEY}"),
                LlmCall(
                    model="openai/gpt-4o",
                    fingerprint="f" * 64,
                    error=f"401 invalid key {MODEL_KEY}",
                    error_kind="auth",
                ),
                Run(command=f"curl -H 'Authorization: Bearer {MODEL_KEY}' api"),
            ],
            expected_seq=0,
        )
        await store.append(
            session, [RunOutput(output=MODEL_KEY, exit_code=0, cause=4)], expected_seq=4
        )
    found = 0
    for name in VIEWS:
        result = await run_query(analyst_database_url, f"SELECT t::text FROM {name} t")
        found += len(result.rows)
        for (text,) in result.rows:
            assert MODEL_KEY not in text, name
    assert found >= 4  # the masked call, the run, the session...
    calls = await run_query(
        analyst_database_url, "SELECT error_message FROM llm_calls WHERE session_id = $1", [session]
    )
    assert calls.rows and "401 invalid key" in calls.rows[0][0]


async def test_a_login_that_can_write_is_refused_for_analytics(
    app_database_url: str, database_url: str
) -> None:
    """`chronicle sql` with the application's or a superuser's URL would rely on READ ONLY
    alone, which the statement itself can lift; such logins are refused outright."""
    for url, who in ((app_database_url, "chronicle_app"), (database_url, "superuser")):
        with pytest.raises(AnalystError, match=who):
            await run_query(url, "SELECT 1")


@pytest.mark.parametrize(
    ("grant", "said"),
    [
        ("GRANT pg_write_all_data TO {}", "a member of pg_write_all_data"),
        ("ALTER ROLE {} CREATEROLE", "allowed to create roles"),
        ("GRANT chronicle_app TO {}", "a member of chronicle_app"),
    ],
)
async def test_an_analyst_login_that_can_also_write_is_refused(
    analyst_database_url: str, superuser: asyncpg.Connection, grant: str, said: str
) -> None:
    """In chronicle_analyst, but also able to write (or to grant itself what writes):
    refused, not trusted to stay inside READ ONLY."""
    login = urlsplit(analyst_database_url).username
    await superuser.execute(grant.format(f'"{login}"'))
    with pytest.raises(AnalystError, match=said):
        await run_query(analyst_database_url, "SELECT 1")


async def test_read_only_even_where_privileges_would_allow(analyst_database_url: str) -> None:
    """A statement that writes is refused by the READ ONLY transaction of `chronicle sql`,
    with a sentence that says so; so is lifting it from within."""
    with pytest.raises(AnalystError, match="only read"):
        await run_query(analyst_database_url, "CREATE TEMP TABLE t (x int)")
    with pytest.raises(AnalystError):
        await run_query(analyst_database_url, "SELECT 1; SET transaction_read_only = off")


async def test_other_logins_queries_are_hidden(
    attacker: asyncpg.Connection, app_login: asyncpg.Connection
) -> None:
    """pg_stat_activity would show the application's statements (and their literals) to a
    member of pg_read_all_stats; the analyst sees only that a session exists."""
    marker = f"marker_{uuid.uuid4().hex}"
    query = app_login.fetchval(f"SELECT pg_sleep(2), '{marker}'")
    task = asyncio.ensure_future(query)
    try:
        await asyncio.sleep(0.5)
        texts = await attacker.fetch("SELECT coalesce(query, '') AS q FROM pg_stat_activity")
        assert texts and all(marker not in row["q"] for row in texts)
    finally:
        await task
