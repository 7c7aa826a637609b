"""Issue 29's done-when, end to end through the `chronicle` command: a field redacted, a
secret found everywhere, a session erased by hand, a person erased and a session erased by a
retention policy; afterwards none of the erased texts is in a superuser's `pg_dump` of the
whole database, in the database's own files after a VACUUM, in any file Chronicle wrote (its
data directory, an export of every session written before and rewritten by each removal, an
export written after), while `verify` and `verify --anchors` still pass and report the
redactions and erasures, and a row deleted behind the log's back is still caught
(docs/erasure.md)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from app.config import Settings
from app.events import AgentState, LlmCall, Message, RunOutput, SessionCreated
from app.events.annotation import Annotation
from app.events.canonical import canonical_json
from app.projections import all_projections, bring_up_to_date
from app.store import EventStore
from app.store.embedded.programs import binaries
from tests.support.analyst_login import analyst_login
from tests.support.cli import chronicle, cli_environment
from tests.support.postgres import ServerAddress

#: What goes, and how: each must be nowhere afterwards.
FIELD = "field-secret-a81d3"  # chronicle redact --field
VALUE = "value-secret-b72e4"  # chronicle redact --value-file --all
ERASED = "erased-content-c63f5"  # chronicle erase
PERSON = "dora-d54a6"  # chronicle users erase (the name)
PERSONAL = "personal-content-e45b7"  # in the person's session
RETAINED = "retained-content-f36c8"  # a retention policy
GONE = (FIELD, VALUE, ERASED, PERSON, PERSONAL, RETAINED)
#: What stays: proof that the scans read what they should.
KEPT = "kept-content-0a1b2"


@pytest.fixture
def owner_env(
    database_url: str, app_database_url: str, pg_address: ServerAddress, tmp_path: Path
) -> Iterator[dict[str, str]]:
    with analyst_login(database_url, pg_address) as analyst:
        yield {
            **cli_environment(app_database_url, tmp_path),
            "CHRONICLE_OWNER_DATABASE_URL": database_url,
            "CHRONICLE_ANALYST_DATABASE_URL": analyst,
            # a policy whose age (under a second) every session ended here has reached
            "CHRONICLE_RETENTION_POLICIES": json.dumps([{"name": "short", "after_days": 1e-5}]),
        }


def run(env: dict[str, str], *args: str, code: int = 0) -> str:
    done = chronicle(*args, env=env, timeout=120)
    assert done.returncode == code, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _message(content: str) -> tuple[str, str]:
    text = canonical_json({"role": "user", "content": content})
    return hashlib.sha256(text.encode()).hexdigest(), text


async def _record(url: str, settings: Settings) -> dict[str, uuid.UUID]:
    s = {name: uuid.uuid4() for name in ("redacted", "erased", "personal", "retained")}
    async with await EventStore.open(url, config=settings.store, masker=settings.masker()) as store:
        shared, only_erased = _message(f"shared {VALUE}"), _message(f"only {ERASED}")
        await store.put_messages([shared[0], only_erased[0]], [shared[1], only_erased[1]])
        await store.append(
            s["redacted"],
            [
                SessionCreated(title=KEPT),
                Message(content=f"{FIELD} and more"),
                RunOutput(output=(VALUE + " ") * 10_000, exit_code=0),  # a blob
                LlmCall(model="m", fingerprint="f" * 64, prompt=[shared[0]]),
                AgentState(state="running"),  # not ended: no policy takes it
            ],
        )
        await store.append(
            s["erased"],
            [
                SessionCreated(title=ERASED),
                RunOutput(output=(ERASED + " ") * 10_000, exit_code=0),
                LlmCall(model="m", fingerprint="f" * 64, prompt=[only_erased[0], shared[0]]),
                AgentState(state="running"),
            ],
        )
        await store.append(
            s["personal"],
            [
                SessionCreated(title=PERSONAL),
                Message(content=PERSONAL),
                AgentState(state="running"),
            ],
        )
        await store.append(s["redacted"], [Annotation(label="reviewed", user=PERSON)])
        await store.append(
            s["retained"],
            [
                SessionCreated(title=RETAINED),
                Message(content=RETAINED),
                AgentState(state="finished"),
            ],
        )
        for projection in all_projections():
            await bring_up_to_date(store, projection)
    return s


async def _later_sessions(url: str, settings: Settings) -> None:
    async with await EventStore.open(url, config=settings.store, masker=settings.masker()) as store:
        for _ in range(20):
            session = uuid.uuid4()
            await store.append(
                session,
                [SessionCreated(title=f"later {KEPT}")]
                + [Message(content=f"{KEPT} {n} " * 50) for n in range(50)],
            )
            await store.put_messages(*map(list, zip(_message(f"{KEPT} {session}"), strict=True)))


async def _projections(url: str, settings: Settings) -> None:
    async with await EventStore.open(url, config=settings.store, masker=settings.masker()) as store:
        for projection in all_projections():
            await bring_up_to_date(store, projection)


def _files_holding(root: Path, texts: tuple[str, ...]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {t}" for t in texts if t.encode() in data]
    return found


async def _database_files(database_url: str) -> tuple[Path, list[Path]]:
    admin = await asyncpg.connect(database_url)
    try:
        data = Path(await admin.fetchval("SELECT current_setting('data_directory')"))
        oid = await admin.fetchval("SELECT oid FROM pg_database WHERE datname = current_database()")
        await admin.execute("CHECKPOINT")  # what is in shared buffers written to the files
    finally:
        await admin.close()
    return data / "base" / str(oid), []


def test_what_is_erased_is_nowhere_and_the_rest_still_proves_itself(
    owner_env: dict[str, str],
    app_database_url: str,
    database_url: str,
    settings: Settings,
    tmp_path: Path,
) -> None:
    env = owner_env
    s = asyncio.run(_record(app_database_url, settings))
    run(env, "users", "add", PERSON)
    asyncio.run(_owned(database_url, s["personal"], PERSON))
    anchors = tmp_path / "anchors.jsonl"
    run(env, "anchor", "--all", "-o", str(anchors))
    before = tmp_path / "before.jsonl"
    run(env, "export", *(str(s[n]) for n in ("redacted", "erased", "personal", "retained")),
        "-o", str(before))  # fmt: skip
    assert all(t.encode() in before.read_bytes() for t in GONE)

    # 1. a field; 2. a value everywhere (the export written before included, each time)
    said = run(
        env, "redact", str(s["redacted"]), "--seq", "2", "--field", "/content", "--reason", "a key"
    )
    assert f"on disk: {before}: rewritten without seq 2 /content of session" in said, said
    assert FIELD.encode() not in before.read_bytes()
    secret = tmp_path / "value.txt"
    secret.write_text(VALUE + "\n")
    said = run(env, "redact", "--value-file", str(secret), "--all", "--reason", "leaked")
    assert str(before) in said
    secret.unlink()  # the operator's own file: not Chronicle's
    # 3. a session by hand; 4. a person; 5. a retention policy
    said = run(env, "erase", str(s["erased"]), "--reason", "asked to")
    assert f"erased {s['erased']}: 5 events" in said and "1 blobs" in said
    assert f"on disk: {before}: rewritten without session {s['erased']}" in said, said
    run(env, "users", "erase", PERSON, code=1)  # without --yes: only what would go
    said = run(env, "users", "erase", PERSON, "--yes")
    assert "1 sessions erased" in said
    assert f"on disk: {before}: rewritten without session {s['personal']}" in said, said
    assert f"on disk: {before}: rewritten without seq 6 /user of session" in said, said
    time.sleep(1.0)
    said = run(env, "retention", "run")
    assert "policy short: 1 sessions erased" in said and str(s["retained"]) in said
    assert f"on disk: {before}: rewritten without session {s['retained']}" in said, said

    # later rows after the removed ones: a vacuum cannot just cut the files short
    asyncio.run(_later_sessions(app_database_url, settings))
    asyncio.run(_projections(app_database_url, settings))
    said = run(env, "db", "scrub", "--full")
    assert "rewritten: blobs, llm_messages" in said
    after = tmp_path / "after.jsonl"
    run(env, "export", str(s["redacted"]), "-o", str(after))
    assert KEPT.encode() in after.read_bytes()
    for view in ("session_costs", "daily_usage", "llm_calls"):  # analytics made afterwards
        run(env, "export", "--view", view, "-o", str(tmp_path / f"{view}.csv"))
    refused = run(env, "export", str(s["erased"]), "-o", str(tmp_path / "erased.jsonl"), code=1)
    assert "erased" in refused

    # verify: every session (with the anchors signed before), each redaction and erasure
    said = run(env, "verify", "--all", "--anchors", str(anchors), "--allow-unanchored")
    assert "BROKEN" not in said
    for erased in (s["erased"], s["personal"], s["retained"]):
        assert f"{erased}  ok: ERASED" in said, said
    verified = run(env, "verify", str(s["redacted"]))
    assert "seq 2 /content redacted by cli:" in verified
    run(env, "verify", "--file", str(before))
    run(env, "verify", "--file", str(after))

    # nowhere: a superuser's dump, the database's files after a VACUUM, Chronicle's files
    dump = subprocess.run(
        [str(binaries() / "pg_dump"), "--data-only", database_url],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    assert KEPT.encode() in dump
    assert [t for t in GONE if t.encode() in dump] == []
    database, _ = asyncio.run(_database_files(database_url))
    assert _files_holding(database, (KEPT,)), "the scan reads the database's files"
    assert _files_holding(database, GONE) == [], _relations(
        database_url, _files_holding(database, GONE)
    )
    # the export written before: each removal rewrote it (and it still proved itself, above)
    assert [t for t in GONE if t.encode() in before.read_bytes()] == []
    assert KEPT.encode() in before.read_bytes()
    assert [json.loads(line)["session_id"] for line in before.read_text().splitlines()
            if '"type":"session"' in line] == [str(s["redacted"])]  # fmt: skip
    assert _files_holding(tmp_path, GONE) == []

    # a row deleted without its record is still caught
    asyncio.run(_delete_behind_the_logs_back(database_url, s["redacted"]))
    said = run(env, "verify", str(s["redacted"]), "--anchors", str(anchors), code=1)
    assert "BROKEN" in said


async def _owned(database_url: str, session: uuid.UUID, name: str) -> None:
    admin = await asyncpg.connect(database_url)
    try:
        await admin.execute(
            "INSERT INTO session_owners (session_id, user_id) "
            "SELECT $1, id FROM users WHERE name = $2",
            session,
            name,
        )
    finally:
        await admin.close()


async def _delete_behind_the_logs_back(database_url: str, session: uuid.UUID) -> None:
    admin = await asyncpg.connect(database_url)
    try:
        await admin.execute("SET session_replication_role = replica")  # the triggers off
        await admin.execute(
            "DELETE FROM events WHERE session_id = $1 AND kind = 'redaction'", session
        )
    finally:
        await admin.close()


def _relations(database_url: str, found: list[str]) -> list[str]:
    async def names() -> list[str]:
        admin = await asyncpg.connect(database_url)
        try:
            rows = await admin.fetch(
                "SELECT relfilenode::text AS node, relname FROM pg_class "
                "WHERE relfilenode::text = ANY($1::text[])",
                [line.split(":")[0].split(".")[0].split("_")[0] for line in found],
            )
            return [f"{r['node']}={r['relname']}" for r in rows] + found
        finally:
            await admin.close()

    return asyncio.run(names())
