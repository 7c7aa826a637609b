"""Blobs and escaped text under attack: verify, tampering, privileges, and migration 0004
(`chronicle verify` reporting a forged blob: tests/system/cli/test_audit_cli.py).

An attacker is the database's superuser (``session_replication_role = replica`` switches the
append-only triggers off) or the application's own login. Before 0004 there was no blobs
table, and before the stored form the sessions below could not be recorded at all (NUL, a
lone surrogate, a 5 MB output or a 1.2 MB create refused by ``append``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import psycopg
import pytest

from app.events import FileEdit, Message, Run, RunOutput
from app.events.canonical import canonical_json
from app.events.llm import LlmCall, LlmResponse, ToolCall
from app.llm.fingerprint import content_hash
from app.store import ContentMismatchError, EventStore, migrate
from app.store.blobs import MissingBlobError
from app.store.integrity.verification import stored_blob_problem, stored_message_problem
from tests.support.payloads import BIG, OUTPUT, SHA, sha256_hex
from tests.support.postgres import ServerAddress, database_from_template


async def test_verify_checks_the_blobs_a_session_refers_to(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    session = uuid.uuid4()
    await store.append(
        session,
        [
            Run(command="make"),
            RunOutput(output=OUTPUT, exit_code=0, cause=1),
            Message(content="hi"),
        ],
    )
    report = await store.verify(session)
    assert report.ok and report.blobs == 1 and report.checked == 3
    assert await stored_blob_problem(store) == (1, None)

    key = sha256_hex(OUTPUT)
    async with superuser.transaction():
        await superuser.execute("SET LOCAL session_replication_role = replica")
        await superuser.execute(
            "UPDATE blobs SET content = replace(content, 'line 7 ', 'line 8 ') "
            "WHERE sha256 = decode($1, 'hex')",
            key,
        )
    report = await store.verify(session)
    assert not report.ok
    assert f"the blob {key} that event 2 refers to does not match its hash" in report.reason
    _checked, problem = await stored_blob_problem(store)
    assert problem == f"blob {key} does not match its hash (edited)"


async def test_a_reference_to_a_missing_blob_is_named(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    session = uuid.uuid4()
    await store.append(session, [FileEdit(command="create", path="/w/big.txt", file_text=BIG)])
    key = sha256_hex(BIG)
    async with superuser.transaction():
        await superuser.execute("SET LOCAL session_replication_role = replica")
        await superuser.execute("DELETE FROM blobs WHERE sha256 = decode($1, 'hex')", key)
    report = await store.verify(session)
    assert not report.ok
    assert f"the blob {key} that event 1 refers to is missing" in report.reason
    with pytest.raises(MissingBlobError, match=f"event 1 of session {session} refers to blob"):
        await store.read(session)
    stored = await store.read(session, resolve_blobs=False)  # still readable as stored
    assert stored[0].payload["file_text"]["$blob"] == key


async def test_the_application_writes_blobs_only_through_the_checking_function(
    store: EventStore, app_login: asyncpg.Connection
) -> None:
    text = "z" * 70_000
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="permission denied"):
        await app_login.execute(
            "INSERT INTO blobs (sha256, content) VALUES (sha256(convert_to($1, 'UTF8')), $1)",
            text,
        )
    with pytest.raises(asyncpg.PostgresError, match="blob 1 of 1 does not match") as raised:
        await app_login.fetchval(
            "SELECT chronicle_put_blobs($1::bytea[], $2::text[])",
            [bytes.fromhex(sha256_hex(text))],
            ["forged"],
        )
    assert raised.value.sqlstate == "CR004"
    with pytest.raises(ContentMismatchError, match="blob 2 of 2 does not match"):
        await store.put_blobs({sha256_hex(text): text, sha256_hex("a"): "b"})
    assert await store.pool.fetchval("SELECT count(*) FROM blobs") == 0
    assert await store.put_blobs({sha256_hex(text): text}) == 1
    assert await store.put_blobs({sha256_hex(text): text}) == 0  # stored once
    for statement in ("UPDATE blobs SET content = 'x'", "DELETE FROM blobs", "TRUNCATE blobs"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_login.execute(statement)


async def test_blobs_are_append_only_even_for_their_owner(superuser: asyncpg.Connection) -> None:
    text = "w" * 2000
    await superuser.execute(
        "INSERT INTO blobs (sha256, content) VALUES (sha256(convert_to($1, 'UTF8')), $1)", text
    )
    for statement in ("UPDATE blobs SET content = 'x'", "DELETE FROM blobs", "TRUNCATE blobs"):
        with pytest.raises(asyncpg.PostgresError, match="the blobs table is append-only"):
            await superuser.execute(statement)


async def test_the_writer_of_blobs_runs_as_the_owner(superuser: asyncpg.Connection) -> None:
    row = await superuser.fetchrow(
        "SELECT pg_get_userbyid(p.proowner) AS owner, p.prosecdef, p.proconfig, "
        "has_function_privilege('public', p.oid, 'EXECUTE') AS public "
        "FROM pg_proc p WHERE p.proname = 'chronicle_put_blobs'"
    )
    assert row["owner"] == "chronicle_owner" and row["prosecdef"] and not row["public"]
    assert row["proconfig"] == ["search_path=pg_catalog, public, pg_temp"]
    owner = await superuser.fetchval("SELECT tableowner FROM pg_tables WHERE tablename = 'blobs'")
    assert owner == "chronicle_owner"


async def test_prompt_messages_with_escapes_and_long_texts_are_stored_and_verified(
    store: EventStore,
) -> None:
    """Prompt messages stay whole in llm_messages (no size limit there), escaped like payloads;
    the llm.call's own response goes to a blob."""
    arguments = json.dumps({"command": "create", "path": "big.txt", "file_text": BIG})
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "open caf\udce9.txt and strip the \x00 bytes"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "edit", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "y" * 1_100_000},
        {"role": "user", "content": {"$blob": SHA, "chars": 1}},  # looks like a reference
    ]
    hashes = [content_hash(message) for message in messages]
    assert await store.put_messages(hashes, [canonical_json(m) for m in messages]) == 4
    call = LlmCall(
        model="m",
        fingerprint="f" * 64,
        prompt=hashes,
        response=LlmResponse(
            content="z" * 1_100_000 + "\x00",
            tool_calls=[ToolCall(id="c2", name="edit", arguments=arguments)],
        ),
    )
    session = uuid.uuid4()
    await store.append(session, [Message(content="go"), call])
    read = (await store.read(session))[1].event()
    assert isinstance(read, LlmCall) and read.response == call.response
    report = await store.verify(session)
    assert report.ok and report.messages == 4 and report.blobs == 2, report
    assert await stored_message_problem(store) == (4, None)
    stored = await store.pool.fetchval(
        "SELECT message FROM llm_messages WHERE hash = $1", bytes.fromhex(hashes[0])
    )
    assert stored == {
        "role": "user",
        "content": {"$esc": "open caf\\udce9.txt and strip the \\0 bytes"},
    }


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row[0] for row in rows}


@pytest.mark.usefixtures("role_settings_changing")
def test_migration_0004_up_down_up(pg_address: ServerAddress) -> None:
    for url in database_from_template(pg_address, "template1", f"b_{uuid.uuid4().hex[:12]}"):
        migrate.upgrade(url, "0004")
        assert "blobs" in _tables(url)
        migrate.downgrade(url, "0003")
        assert "blobs" not in _tables(url)
        with psycopg.connect(url) as connection:
            assert connection.execute(
                "SELECT count(*) FROM pg_proc WHERE proname = 'chronicle_put_blobs'"
            ).fetchone() == (0,)
            source = connection.execute(
                "SELECT prosrc FROM pg_proc WHERE proname = 'chronicle_refuse_change'"
            ).fetchone()
            assert source is not None and "the events table is append-only" in source[0]
        migrate.upgrade(url, "0004")
        assert "blobs" in _tables(url)
        with psycopg.connect(url) as connection:
            inserted = connection.execute(
                "SELECT chronicle_put_blobs(ARRAY[sha256('abc')], ARRAY['abc'])"
            ).fetchone()
        assert inserted == (1,)
