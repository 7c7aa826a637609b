"""`chronicle redact --value-file` and the copies Chronicle wrote to disk: a session's export
file, a view as CSV and as Parquet, an ATIF trajectory and an archive directory, each noted in
the data directory's ledger when written. The secret goes from every file it can go from
(the export still verifies, with markers where the database has them), and the archive the
database records is named "found, not rewritten", with the reason, and exit 1.

Real PostgreSQL and real `chronicle` processes. Session "live" holds the secret in a command,
a long output (a blob) and a prompt message, and has not ended; session "old" ended last
month, holds it in a command, and is archived (its month detached, so the archive is the only
copy of it).
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


async def _record(app_url: str, owner_url: str, settings: Settings) -> tuple[uuid.UUID, uuid.UUID]:
    live, old = uuid.uuid4(), uuid.uuid4()
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
        )
    finally:
        await owner.close()
    return live, old


def _holds(path: Path) -> bool:
    data = path.read_bytes()
    if any(form in data for form in in_bytes(SECRET)):
        return True
    if data[:4] == b"PAR1":
        rows = pyarrow.parquet.read_table(str(path)).to_pylist()
        return SECRET in json.dumps(rows, default=str, ensure_ascii=False).replace('\\"', '"')
    return False


def test_a_secret_goes_from_the_exports_and_the_recorded_archive_is_named(
    owner_env: dict[str, str], database_url: str, settings: Settings, tmp_path: Path
) -> None:
    live, old = asyncio.run(_record(owner_env["CHRONICLE_DATABASE_URL"], database_url, settings))
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
        done = chronicle("export", *args, env=owner_env)
        assert done.returncode == 0, done.stderr
    exports["sessions"].chmod(0o640)
    archive = tmp_path / "archive"
    archived = chronicle(
        "archive", "--before", datetime.now(UTC).isoformat(), "-o", str(archive), env=owner_env
    )
    assert archived.returncode == 0, archived.stderr
    assert "archived 1 sessions" in archived.stdout and "detached events_" in archived.stdout
    noted = (tmp_path / "data" / "exports.jsonl").read_text().splitlines()
    ledger = [json.loads(line) for line in noted]
    assert [(e["path"], e["kind"]) for e in ledger] == [
        *((str(path), kind) for kind, path in exports.items()), (str(archive), "archive"),
    ]  # fmt: skip
    assert ledger[0]["sessions"] == [str(live)] and ledger[-1]["sessions"] == [str(old)]
    assert all(_holds(path) for path in exports.values())
    in_archive = sorted(p.name for p in archive.iterdir() if _holds(p))
    assert in_archive == ["events.parquet", "sessions.jsonl"]

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
    assert f"{exports['csv']}: found at line 2, line 3;" in said, said  # two commands' rows
    for name in in_archive:
        line = next(x for x in said.splitlines() if x.startswith(f"on disk: {archive / name}:"))
        assert "found, not rewritten: the database records this archive" in line, line
    assert "searched 5 copies on disk: the value was in 6 files, 4 rewritten" in redacted.stderr
    assert "error: the value is still on disk in 2 files" in redacted.stderr
    assert oct(exports["sessions"].stat().st_mode & 0o777) == "0o640"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no draft left behind

    # the export still proves itself, the database's markers in it; so does the archive
    checked = chronicle("verify", "--file", str(exports["sessions"]), env=owner_env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    events = [json.loads(x) for x in exports["sessions"].read_text().splitlines()][2:]
    run = next(e for e in events if e.get("kind") == "run")
    call = next(e for e in events if e.get("kind") == "llm.call")
    assert run["payload"]["command"] == "[redacted]" and call["payload"]["prompt"] == ["[redacted]"]
    listed = chronicle("events", str(live), "--json", env=owner_env).stdout.splitlines()
    in_db = json.loads(listed[run["seq"] - 1])
    assert in_db["payload"]["command"] == "[redacted]"
    proved = chronicle("verify", "--file", str(archive), "--allow-unanchored", env=owner_env)
    assert proved.returncode == 0, proved.stdout + proved.stderr

    # a session whose prompt message was redacted exports again, and verifies
    again = tmp_path / "out" / "again.jsonl"
    exported = chronicle("export", str(live), "-o", str(again), env=owner_env)
    assert exported.returncode == 0, exported.stderr
    assert chronicle("verify", "--file", str(again), env=owner_env).returncode == 0
    assert not _holds(again)
