"""`chronicle archive`: ended sessions to a verified directory, marked in the database; the
directory proved without a database, tampering in it named, imported into a fresh database,
and queried in place with the numbers `chronicle sql` gave before.

Real PostgreSQL and real `chronicle` processes. Two sessions ended (finished; failed), two did
not (interrupted; paused by the user): only the first two are archived.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.config import Settings
from app.events import AgentState, LlmCall, LlmUsage, Message, Run, RunOutput, SessionCreated
from app.events.canonical import stored_json
from app.events.platform_audit import PLATFORM_LOG_ID
from app.events.stored_form import stored_form
from app.store import EventStore, StoreError
from app.store.archive import check_directory
from app.store.integrity.anchor_key import load_public_key
from tests.support.analyst_login import analyst_login
from tests.support.cli import chronicle, cli_environment
from tests.support.postgres import ServerAddress, database_from_template

LONG_OUTPUT = "a line of a long build log\n" * 4000  # ~100 KB: stored as a blob


@pytest.fixture
def other_database_url(pg_address: ServerAddress, pg_template: str) -> Iterator[str]:
    """A second fresh, migrated database (as its owner): where the archive is imported."""
    yield from database_from_template(pg_address, pg_template, f"t_{uuid.uuid4().hex[:16]}")


@pytest.fixture
def owner_env(
    database_url: str, app_database_url: str, pg_address: ServerAddress, tmp_path: Path
) -> Iterator[dict[str, str]]:
    """The command as an operator runs it: the application's URL, the owner's, an analyst's."""
    with analyst_login(database_url, pg_address) as analyst:
        yield {
            **cli_environment(app_database_url, tmp_path),
            "CHRONICLE_OWNER_DATABASE_URL": database_url,
            "CHRONICLE_ANALYST_DATABASE_URL": analyst,
        }


@pytest.fixture
def other_env(
    other_database_url: str, pg_address: ServerAddress, tmp_path: Path
) -> Iterator[dict[str, str]]:
    (tmp_path / "other").mkdir()
    with analyst_login(other_database_url, pg_address) as analyst:
        yield {
            **cli_environment(other_database_url, tmp_path / "other"),
            "CHRONICLE_ANALYST_DATABASE_URL": analyst,
        }


async def _record(store: EventStore) -> dict[str, uuid.UUID]:
    message = {"role": "user", "content": "count the files"}
    text = stored_json(stored_form(message))
    key = hashlib.sha256(text.encode()).hexdigest()
    await store.put_messages([key], [text])
    sessions = {name: uuid.uuid4() for name in ("finished", "failed", "interrupted", "paused")}
    usage = LlmUsage(prompt_tokens=120, completion_tokens=30, total_tokens=150)
    for name, session in sessions.items():
        await store.append(
            session,
            [
                SessionCreated(title=name),
                Message(content=f"task {name}"),
                LlmCall(
                    model="openai/gpt-4o",
                    fingerprint="f" * 64,
                    prompt=[key],
                    usage=usage,
                    cost_usd=0.25,
                ),
            ],
            expected_seq=0,
        )
    finished = sessions["finished"]
    await store.append(finished, [Run(command="make", cause=3)], expected_seq=3)
    await store.append(finished, [RunOutput(output=LONG_OUTPUT, exit_code=0, cause=4)])
    await store.append(finished, [AgentState(state="finished", reason="done")])
    await store.append(sessions["failed"], [AgentState(state="error", reason="model refused")])
    await store.append(sessions["interrupted"], [AgentState(state="running")])
    paused = sessions["paused"]
    await store.append(paused, [AgentState(state="paused", source="user")])
    await store.append(paused, [AgentState(state="paused", reason="paused by the user")])
    return sessions


def _sql(env: dict[str, str], query: str, *extra: str) -> list[dict[str, object]]:
    result = chronicle("sql", "--json", *extra, query, env=env)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


NUMBERS = (
    "SELECT count(*) AS sessions, sum(model_calls) AS calls, sum(input_tokens) AS input, "
    "sum(output_tokens) AS output, sum(cost_usd) AS cost, max(status) AS status "
    "FROM session_state WHERE session_id IN ({ids})"
)


def _flip(path: Path, needle: bytes) -> None:
    """Change one byte of the file: the first byte of ``needle`` where it first occurs."""
    data = bytearray(path.read_bytes())
    at = data.index(needle)
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_archive_verify_tamper_import_and_query(
    settings: Settings,
    owner_env: dict[str, str],
    other_env: dict[str, str],
    database_url: str,
    tmp_path: Path,
) -> None:
    sessions = asyncio.run(_record_with_new_store(owner_env, settings))
    archived = [sessions["finished"], sessions["failed"]]
    ids = ", ".join(f"'{session}'" for session in archived)
    before_numbers = _sql(owner_env, NUMBERS.format(ids=ids))
    calls = _sql(owner_env, f"SELECT count(*) AS n FROM llm_calls WHERE session_id IN ({ids})")
    spend = _sql(
        owner_env,
        "SELECT gen_ai_request_model AS model, count(*) AS calls, sum(cost_usd) AS cost "
        "FROM llm_calls "
        f"WHERE session_id IN ({ids}) GROUP BY 1",
    )

    key = tmp_path / "archive.key"
    made = chronicle("anchor", "--new-key", str(key), env=owner_env)
    assert made.returncode == 0, made.stderr
    public = tmp_path / "archive.key.pub"

    # refusals: one line, non-zero, nothing written
    now = datetime.now(UTC)
    bad_date = chronicle(
        "archive", "--before", "2026-13-01", "-o", str(tmp_path / "a"), env=owner_env
    )
    future = (now + timedelta(days=2)).date().isoformat()
    in_future = chronicle("archive", "--before", future, "-o", str(tmp_path / "a"), env=owner_env)
    full = tmp_path / "full"
    full.mkdir()
    (full / "something").write_text("x")
    not_empty = chronicle("archive", "--before", now.isoformat(), "-o", str(full), env=owner_env)
    for refused, words in (
        (bad_date, "is not a date"),
        (in_future, "in the future"),
        (not_empty, "is not empty"),
    ):
        assert refused.returncode == 2, refused.stderr
        assert words in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "a").exists()
    nothing = chronicle(
        "archive", "--before", "2001-01-01", "-o", str(tmp_path / "a"), env=owner_env
    )
    assert nothing.returncode == 0 and "nothing to archive" in nothing.stdout
    assert not (tmp_path / "a").exists()

    archive = tmp_path / "archive"
    ran = chronicle(
        "archive", "--before", datetime.now(UTC).isoformat(), "-o", str(archive),
        "--key", str(key), env=owner_env,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert f"archived 2 sessions, 10 events to {archive}" in ran.stdout
    assert "kept: 2 sessions" in ran.stdout and "1 interrupted" in ran.stdout
    assert "1 paused" in ran.stdout
    assert "archive: written" in ran.stderr  # progress
    assert sorted(path.name for path in archive.iterdir()) == [
        "anchors.jsonl", "events.parquet", "llm_messages.parquet", "manifest.json", "manifest.sig",
        "session_state.parquet", "sessions.jsonl", "sessions.parquet",
    ]  # fmt: skip
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".archive.partial")]
    manifest = json.loads((archive / "manifest.json").read_text())
    assert [s["session_id"] for s in manifest["sessions"]] == [str(s) for s in archived]
    digest = hashlib.sha256((archive / "manifest.json").read_bytes()).hexdigest()

    # the database says where they went; verify reports them archived, not tampered
    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT id, archived_to, archive_manifest, archived_by FROM sessions "
            "WHERE archived_at IS NOT NULL ORDER BY id"
        ).fetchall()
    assert sorted(row[0] for row in rows) == sorted(archived)
    assert {(row[1], bytes(row[2]).hex()) for row in rows} == {(str(archive), digest)}
    assert all(row[3].startswith("cli:") for row in rows)
    checked = chronicle("verify", str(sessions["finished"]), env=owner_env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        f"ARCHIVED to {archive}" in checked.stdout and "all 6 events still here" in checked.stdout
    )

    # an archived session takes no more events; the others still do
    asyncio.run(_append_refused(owner_env, settings, sessions))

    # recorded in the platform's audit log
    log = chronicle("audit", "log", env=owner_env)
    assert log.returncode == 0, log.stderr
    assert "archived 2 sessions (10 events)" in log.stdout and digest in log.stdout

    # the directory proves itself without a database
    (tmp_path / "elsewhere").mkdir()
    no_db = cli_environment("postgresql://nobody@127.0.0.1:1/none", tmp_path / "elsewhere")
    proved = chronicle("verify", "--file", str(archive), "--public-key", str(public), env=no_db)
    assert proved.returncode == 0, proved.stdout + proved.stderr
    assert f"ok: 2 sessions, 10 events, 8 files match the manifest (manifest sha256 {digest})" in (
        proved.stdout
    )
    unkeyed = chronicle("verify", "--file", str(archive), env=no_db)
    assert unkeyed.returncode == 3 and "signatures not checked" in unkeyed.stderr

    # a file added, a file missing, an anchor not by the trusted key: each named
    _problems_named(archive, tmp_path, public)

    # one changed byte, in the JSONL or in the Parquet, is caught and named
    jsonl_copy = tmp_path / "jsonl-tampered"
    shutil.copytree(archive, jsonl_copy)
    _flip(jsonl_copy / "sessions.jsonl", b"task finished")
    broken = chronicle("verify", "--file", str(jsonl_copy), "--public-key", str(public), env=no_db)
    assert broken.returncode == 1
    assert "BROKEN: sessions.jsonl was changed" in broken.stdout
    assert f"line 5: event 2 of session {sessions['finished']} does not match" in broken.stdout
    parquet_copy = tmp_path / "parquet-tampered"
    shutil.copytree(archive, parquet_copy)
    data = bytearray((parquet_copy / "events.parquet").read_bytes())
    data[len(data) // 2] ^= 0x01
    (parquet_copy / "events.parquet").write_bytes(bytes(data))
    broken = chronicle(
        "verify", "--file", str(parquet_copy), "--public-key", str(public), env=no_db
    )
    assert broken.returncode == 1 and "BROKEN: events.parquet was changed" in broken.stdout

    # the same numbers in place, from the Parquet, as chronicle sql gave from the database
    in_place = _sql(no_db, NUMBERS.format(ids=ids), "--archive", str(archive))
    assert in_place == before_numbers
    archived_calls = _sql(
        no_db, "SELECT count(*) AS n FROM events WHERE kind = 'llm.call'", "--archive", str(archive)
    )
    assert archived_calls == calls
    documented = _sql(  # the query docs/analytics.md shows, from the payload
        no_db,
        "SELECT payload->>'$.model' AS model, count(*) AS calls, "
        "sum(CAST(payload->>'$.cost_usd' AS DOUBLE)) AS cost FROM events "
        "WHERE kind = 'llm.call' GROUP BY 1 ORDER BY 2 DESC",
        "--archive",
        str(archive),
    )
    assert documented == spend
    table = chronicle("sql", "--archive", str(archive), "SELECT kind, count(*) AS n FROM events "
                      "GROUP BY kind ORDER BY kind", env=no_db)  # fmt: skip
    assert table.returncode == 0 and "(6 rows)" in table.stdout, table.stdout + table.stderr
    as_csv = chronicle("sql", "--csv", "--archive", str(archive), "SELECT id FROM sessions "
                       "ORDER BY id", env=no_db)  # fmt: skip
    assert as_csv.stdout.splitlines() == ["id", *sorted(str(s) for s in archived)]
    outside = chronicle("sql", "--archive", str(archive), "SELECT * FROM read_csv('/etc/passwd')",
                        env=no_db)  # fmt: skip
    assert outside.returncode == 1 and "error: the archive query failed" in outside.stderr

    # imported into a fresh database, where the sessions verify as they did
    refused = chronicle("import", str(jsonl_copy), env=other_env)
    assert refused.returncode == 1 and "does not verify" in refused.stderr
    loaded = chronicle("import", str(archive), env=other_env)
    assert loaded.returncode == 0, loaded.stderr
    assert "imported 2 sessions from the archive" in loaded.stdout and "10 events written" in (
        loaded.stdout
    )
    for session in archived:
        there = chronicle("verify", str(session), env=other_env)
        assert there.returncode == 0 and "ok: " in there.stdout, there.stdout
    assert _sql(other_env, NUMBERS.format(ids=ids))[0]["calls"] == before_numbers[0]["calls"]


async def _record_with_new_store(env: dict[str, str], settings: Settings) -> dict[str, uuid.UUID]:
    async with await EventStore.open(
        env["CHRONICLE_DATABASE_URL"], config=settings.store, masker=settings.masker()
    ) as store:
        return await _record(store)


async def _append_refused(
    env: dict[str, str], settings: Settings, sessions: dict[str, uuid.UUID]
) -> None:
    async with await EventStore.open(
        env["CHRONICLE_DATABASE_URL"], config=settings.store, masker=settings.masker()
    ) as store:
        with pytest.raises(StoreError, match="is archived"):
            await store.append(sessions["finished"], [Message(content="one more thing")])
        await store.append(sessions["interrupted"], [Message(content="go on")])
        assert await store.last_seq(PLATFORM_LOG_ID) >= 2


def _problems_named(archive: Path, tmp_path: Path, public: Path) -> None:
    trusted = load_public_key(public)
    assert check_directory(archive, trusted).ok
    added = tmp_path / "added"
    shutil.copytree(archive, added)
    (added / "notes.txt").write_text("mine")
    assert "notes.txt is not in the manifest" in check_directory(added, trusted).reason
    missing = tmp_path / "missing"
    shutil.copytree(archive, missing)
    (missing / "anchors.jsonl").unlink()
    assert "anchors.jsonl is missing" in check_directory(missing, trusted).reason
    edited = tmp_path / "edited"
    shutil.copytree(archive, edited)
    _flip(edited / "manifest.json", b"cli:")  # who archived it, changed
    assert check_directory(edited, None).ok  # no key: only the hashes, which still agree
    report = check_directory(edited, trusted)
    assert not report.ok and "manifest.json was changed" in report.reason
    other_key = Ed25519PrivateKey.generate().public_key()
    report = check_directory(archive, other_key)
    assert not report.ok and "not the trusted key" in report.reason
