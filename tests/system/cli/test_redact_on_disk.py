"""`chronicle redact --value-file` and the copies Chronicle wrote to disk: a session's export
file, a view as CSV and as Parquet, an ATIF trajectory and an archive directory the database
records, each noted in the data directory's ledger when written. The secret goes from every
file (the export still verifies, with markers where the database has them; the archive is
made anew, and the database records its new manifest, so both `verify`s pass), and from the
database but for an archived session whose events are still there: those places are named,
and the command exits 1.

Real PostgreSQL and real `chronicle` processes. Session "live" holds the secret in a command,
a long output (a blob) and a prompt message, and has not ended; session "old" ended last
month, holds it in a command, and is archived (its month detached, so the archive is the only
copy of it); session "done" ended this month, holds it in a command and names the same prompt
message, and is archived with "old" (its month stays: "live" has events in it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pyarrow.parquet
import pytest

from app.config import Settings
from app.events import AgentState, LlmCall, Message, Run, RunOutput, SessionCreated
from app.events.canonical import stored_json
from app.events.stored_form import stored_form
from app.store import EventStore
from app.store.on_disk.forms import in_bytes
from tests.support.analyst_login import analyst_login
from tests.support.cli import chronicle, cli_environment
from tests.support.months import import_last_month
from tests.support.postgres import ServerAddress

SECRET = 'tok"en\\live-Secret-77'


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


async def _record(app_url: str, owner_url: str, settings: Settings) -> tuple[uuid.UUID, ...]:
    live, old, done = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    message = {"role": "user", "content": f"deploy with {SECRET}"}
    key = hashlib.sha256(stored_json(stored_form(message)).encode()).hexdigest()
    async with await EventStore.open(
        app_url, config=settings.store, masker=settings.masker()
    ) as store:
        await store.put_messages([key], [stored_json(stored_form(message))])
        await store.append(
            live,
            [
                SessionCreated(title="live"),
                Message(content="deploy it"),
                LlmCall(model="openai/gpt-4o", fingerprint="f" * 64, prompt=[key]),
                Run(command=f"deploy --token '{SECRET}'", cause=3),
                RunOutput(output="a line of a long log\n" * 4000 + SECRET, exit_code=0, cause=4),
                AgentState(state="running"),
            ],
            expected_seq=0,
        )
        await store.append(
            done,
            [
                SessionCreated(title="done"),
                Run(command=f"rotate --old '{SECRET}'"),
                LlmCall(model="openai/gpt-4o", fingerprint="e" * 64, prompt=[key]),
                AgentState(state="finished", reason="rotated"),
            ],
            expected_seq=0,
        )
    owner = await asyncpg.connect(owner_url)
    try:
        await import_last_month(
            owner,
            old,
            [
                SessionCreated(title="old"),
                Run(command=f"deploy --token '{SECRET}'"),
                AgentState(state="finished", reason="done"),
            ],
            chain=2,  # recorded since 0029: a marker can take its secret
        )
    finally:
        await owner.close()
    return live, old, done, key


def _holds(path: Path) -> bool:
    data = path.read_bytes()
    if any(form in data for form in in_bytes(SECRET)):
        return True
    if data[:4] == b"PAR1":
        rows = pyarrow.parquet.read_table(str(path)).to_pylist()
        return SECRET in json.dumps(rows, default=str, ensure_ascii=False).replace('\\"', '"')
    return False


def _manifest_named(said: str) -> str:
    """The manifest sha256 a `chronicle verify` line names."""
    return said.split("manifest sha256 ", 1)[1][:64]


def test_a_secret_goes_from_the_exports_and_the_recorded_archive(
    owner_env: dict[str, str], database_url: str, settings: Settings, tmp_path: Path
) -> None:
    app_url = owner_env["CHRONICLE_DATABASE_URL"]
    live, old, done, message = asyncio.run(_record(app_url, database_url, settings))
    out = tmp_path / "out"
    exports = {
        "sessions": out / "live.jsonl",
        "csv": out / "tool_calls.csv",
        "parquet": out / "tool_calls.parquet",
        "atif": out / "live.atif.json",
    }
    for args in (
        [str(live), "-o", str(exports["sessions"])],
        ["--view", "tool_calls", "-o", str(exports["csv"])],
        ["--view", "tool_calls", "--format", "parquet", "-o", str(exports["parquet"])],
        ["--format", "atif", str(live), "-o", str(exports["atif"])],
    ):
        exported = chronicle("export", *args, env=owner_env)
        assert exported.returncode == 0, exported.stderr
    exports["sessions"].chmod(0o640)
    archive = tmp_path / "archive"
    archived = chronicle(
        "archive", "--before", datetime.now(UTC).isoformat(), "-o", str(archive), env=owner_env
    )
    assert archived.returncode == 0, archived.stderr
    assert "archived 2 sessions" in archived.stdout and "detached events_" in archived.stdout
    noted = (tmp_path / "data" / "exports.jsonl").read_text().splitlines()
    ledger = [json.loads(line) for line in noted]
    assert [(e["path"], e["kind"]) for e in ledger] == [
        *((str(path), kind) for kind, path in exports.items()), (str(archive), "archive"),
    ]  # fmt: skip
    assert ledger[0]["sessions"] == [str(live)]
    assert sorted(ledger[-1]["sessions"]) == sorted([str(old), str(done)])
    assert all(_holds(path) for path in exports.values())
    in_archive = sorted(p.name for p in archive.iterdir() if _holds(p))
    assert in_archive == ["events.parquet", "llm_messages.parquet", "sessions.jsonl"]
    before = chronicle("verify", str(done), env=owner_env)
    assert before.returncode == 0 and "all 4 events still here" in before.stdout, before.stdout

    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    redacted = chronicle(
        "redact", "--value-file", str(secret), "--all", "--reason", "leaked token", env=owner_env
    )
    assert redacted.returncode == 1, redacted.stdout + redacted.stderr
    said = redacted.stdout
    for path in exports.values():
        assert f"on disk: {path}: found at " in said and f"{path}" in said
        assert not _holds(path), path
    for kind in ("sessions", "csv", "parquet", "atif"):
        line = next(x for x in said.splitlines() if x.startswith(f"on disk: {exports[kind]}:"))
        assert line.endswith("; rewritten without it"), line
    assert f"{exports['csv']}: found at line 2, line 3, line 4;" in said, said  # 3 commands
    for name in in_archive:
        line = next(x for x in said.splitlines() if x.startswith(f"on disk: {archive / name}:"))
        assert line.endswith("; rewritten without it"), line
    assert "searched 5 copies on disk: the value was in 7 files, 7 rewritten" in redacted.stderr
    assert "still on disk" not in redacted.stderr
    # "done"'s events are still in the database, and an archived session takes no record
    kept = [x for x in said.splitlines() if x.startswith(f"in archived session {done}:")]
    assert kept == [
        f"in archived session {done}: event 2 holds it; not redacted in the database (its "
        f"archive, {archive}, is the record, and an archived session takes no redaction "
        "record); its events here go when their month is detached",
        f"in archived session {done}: event 3 names the message {message}, which holds it; "
        f"neither is redacted in the database (its archive, {archive}, is the record, and an "
        "archived session takes no redaction record); its events here go when their month "
        "is detached",
    ], said
    assert "error: the value is still in the database in 2 events of archived sessions" in (
        redacted.stderr
    )
    assert oct(exports["sessions"].stat().st_mode & 0o777) == "0o640"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no draft left behind

    # the export still proves itself, the database's markers in it
    checked = chronicle("verify", "--file", str(exports["sessions"]), env=owner_env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    events = [json.loads(x) for x in exports["sessions"].read_text().splitlines()][2:]
    run = next(e for e in events if e.get("kind") == "run")
    call = next(e for e in events if e.get("kind") == "llm.call")
    assert run["payload"]["command"] == "[redacted]" and call["payload"]["prompt"] == ["[redacted]"]
    listed = chronicle("events", str(live), "--json", env=owner_env).stdout.splitlines()
    in_db = json.loads(listed[run["seq"] - 1])
    assert in_db["payload"]["command"] == "[redacted]"

    # the archive was made anew, nothing of it (or of the old one) left with the secret, and
    # it proves itself; the database records its new manifest, and every session verifies
    assert not [p for p in archive.rglob("*") if p.is_file() and _holds(p)]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    proved = chronicle("verify", "--file", str(archive), "--allow-unanchored", env=owner_env)
    assert proved.returncode == 0, proved.stdout + proved.stderr
    new_manifest = hashlib.sha256((archive / "manifest.json").read_bytes()).hexdigest()
    assert _manifest_named(proved.stdout) == new_manifest != _manifest_named(before.stdout)
    for session in (old, done):
        verified = chronicle("verify", str(session), env=owner_env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert _manifest_named(verified.stdout) == new_manifest, verified.stdout
    everything = chronicle("verify", "--all", env=owner_env)
    assert everything.returncode == 0, everything.stdout + everything.stderr
    lines = [json.loads(x) for x in (archive / "sessions.jsonl").read_text().splitlines()]
    runs = [x for x in lines if x.get("kind") == "run"]
    assert {(x["session_id"], x["payload"]["command"]) for x in runs} == {
        (str(old), "[redacted]"), (str(done), "[redacted]"),
    }  # fmt: skip

    # a session whose prompt message was redacted exports again, and verifies
    again = tmp_path / "out" / "again.jsonl"
    exported = chronicle("export", str(live), "-o", str(again), env=owner_env)
    assert exported.returncode == 0, exported.stderr
    assert chronicle("verify", "--file", str(again), env=owner_env).returncode == 0
    assert not _holds(again)
