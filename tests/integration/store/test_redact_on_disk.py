"""A secret searched for in the copies the ledger lists (app/store/on_disk/search.py): an
export file, a view's CSV and an archive directory the database does not record are each
rewritten without it; a path gone from the disk is reported; with sessions named, only the
copies that hold one of them (and the views) are searched. An archive the database records
is rewritten with its record (app/store/on_disk/recorded_archive.py), or neither changes."""

from __future__ import annotations

import csv
import hashlib
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.config import Settings
from app.events import AgentState, Run, SessionCreated
from app.sessions.archiving import ArchiveRequest, archive_sessions
from app.sessions.platform_audit import Actor
from app.store import EventStore, record_written, redact_on_disk, redact_value
from app.store.archive import check_directory, check_file
from app.store.on_disk.forms import in_bytes
from app.store.on_disk.recorded_archive import record_rewritten_manifest
from tests.support.export_files import SessionBlock, write_archive, write_export

SECRET = "xoxb-ledger-'secret'-1234"
KEY = Ed25519PrivateKey.generate()
ACTOR = Actor(name="cli:operator", via="cli")


def _holds(path: Path) -> bool:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return any(form in p.read_bytes() for p in files for form in in_bytes(SECRET))


async def test_the_listed_copies_lose_the_secret(store: EventStore, tmp_path: Path) -> None:
    data = tmp_path / "data"
    block = SessionBlock()
    block.event("run", {"command": f"curl -H 'token: {SECRET}'"})
    export = write_export(tmp_path / "one.jsonl", block)
    archived = SessionBlock()
    archived.event("run", {"command": f"echo {SECRET}"})
    archive = write_archive(
        tmp_path / "archive", KEY, archived, titles={str(archived.session_id): "quiet"}
    )
    view = tmp_path / "view.csv"
    with view.open("w", newline="") as out:
        csv.writer(out, lineterminator="\n").writerows([["command"], [f"echo {SECRET}"]])
    record_written(data, export, "sessions", sessions=[block.session_id])
    record_written(data, archive, "archive", sessions=[archived.session_id])
    record_written(data, view, "csv", view="tool_calls")
    record_written(data, tmp_path / "gone.jsonl", "sessions", sessions=[block.session_id])

    elsewhere = await redact_on_disk(store, SECRET, data_dir=data, sessions=[uuid.uuid4()], key=KEY)
    assert elsewhere.searched == [str(view)]  # a view may hold any session's rows
    assert [f.path for f in elsewhere.findings] == [str(view)] and not elsewhere.left
    assert _holds(export) and _holds(archive) and not _holds(view)

    report = await redact_on_disk(store, SECRET, data_dir=data, sessions=None, key=KEY)
    assert report.missing == [str(tmp_path / "gone.jsonl")] and report.problems == []
    assert sorted(Path(f.path).name for f in report.findings) == [
        "events.parquet", "one.jsonl", "sessions.jsonl",
    ]  # fmt: skip
    assert not report.left, report.findings
    assert not _holds(export) and not _holds(archive)
    assert check_file(export).ok
    proved = check_directory(archive, KEY.public_key())
    assert proved.ok, proved.reason


async def _manifests(superuser: asyncpg.Connection, archived_to: str) -> set[str]:
    rows = await superuser.fetch(
        "SELECT DISTINCT encode(archive_manifest, 'hex') FROM sessions WHERE archived_to = $1",
        archived_to,
    )
    return {row[0] for row in rows}


def _hidden(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


async def test_an_archive_the_database_records_is_rewritten_with_its_record(
    store: EventStore,
    superuser: asyncpg.Connection,
    database_url: str,
    settings: Settings,
    tmp_path: Path,
) -> None:
    """The archive is made anew and the database records its new manifest in one step, or
    neither changes; the archived session's events still in the database are kept, and
    named, not refused."""
    session = uuid.uuid4()
    await store.append(
        session,
        [
            SessionCreated(title="quiet"),
            Run(command=f"echo {SECRET}"),
            AgentState(state="finished"),
        ],
    )
    directory = tmp_path / "archive"
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as owner:
        request = ArchiveRequest(
            before=datetime.now(UTC), directory=directory, actor=ACTOR, detach=False
        )
        outcome = await archive_sessions(owner, request, KEY, lambda text, *, steady=False: None)
    assert outcome is not None and outcome.detached == []
    archived_to, first = str(directory.absolute()), outcome.manifest_sha256
    data = tmp_path / "data"  # no ledger: the database names the archive

    # the database names another manifest now: the directory is not the one it records
    other = hashlib.sha256(b"another").digest()
    rewrite = "SELECT chronicle_rewrite_archive_manifest($1, $2, $3)"
    assert await superuser.fetchval(rewrite, archived_to, bytes.fromhex(first), other) == 1
    as_it_was = _snapshot(directory)
    refused = await redact_on_disk(store, SECRET, data_dir=data, sessions=None, key=KEY)
    assert [f.rewritten for f in refused.findings] == [False, False], refused.findings
    assert all(
        "the database did not record its new manifest" in f.problem for f in refused.findings
    )
    assert _snapshot(directory) == as_it_was
    assert _hidden(tmp_path) == []  # nothing made beside it is left
    await superuser.fetchval(rewrite, archived_to, other, bytes.fromhex(first))

    # a failure before the commit leaves the record as it was
    async def failing() -> None:
        raise OSError("the rename failed")

    with pytest.raises(OSError, match="the rename failed"):
        await record_rewritten_manifest(
            store, archived_to, bytes.fromhex(first), other, before_commit=failing
        )
    assert await _manifests(superuser, archived_to) == {first}

    # the database's copy of the session is kept, and named; nothing refused
    found = await redact_value(store, SECRET, sessions=None, reason="leaked", user="ops")
    assert found.records == []
    assert [(k.session_id, k.seq, k.archived_to) for k in found.kept] == [(session, 2, archived_to)]

    report = await redact_on_disk(store, SECRET, data_dir=data, sessions=None, key=KEY)
    assert sorted(Path(f.path).name for f in report.findings) == [
        "events.parquet", "sessions.jsonl",
    ]  # fmt: skip
    assert not report.left and report.searched == [archived_to], report
    assert not _holds(directory)
    proved = check_directory(directory, KEY.public_key())
    assert proved.ok, proved.reason
    assert await _manifests(superuser, archived_to) == {proved.manifest_sha256} != {first}
    verified = await store.verify(session)
    assert verified.ok, verified.reason
    assert verified.archived is not None and verified.archived.manifest == proved.manifest_sha256
    assert _hidden(tmp_path) == []  # nothing made beside it is left
