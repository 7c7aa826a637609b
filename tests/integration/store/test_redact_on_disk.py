"""A secret searched for in the copies the ledger lists (app/store/on_disk/search.py): an
export file, a view's CSV and an archive directory the database does not record are each
rewritten without it; a path gone from the disk is reported; with sessions named, only the
copies that hold one of them (and the views) are searched. An archive the database records
is rewritten with its record (app/store/on_disk/recorded_archive.py), or neither changes.
A redaction's parts and erased sessions leave the same copies (redacted_copies.py,
erased_copies.py)."""

from __future__ import annotations

import csv
import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.config import Settings
from app.events import AgentState, LlmCall, Message, Run, RunOutput, SessionCreated
from app.events.canonical import stored_json
from app.events.commitment import redact as with_marker
from app.events.stored_form import REDACTED, stored_form
from app.sessions.archiving import ArchiveRequest, archive_sessions
from app.sessions.platform_audit import Actor
from app.store import (
    EventStore,
    RedactedPart,
    erase_session,
    record_written,
    redact_on_disk,
    redact_value,
    remove_parts_on_disk,
    remove_sessions_on_disk,
    texts_of_part,
)
from app.store.archive import check_directory, check_file, export_sessions
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


# -- a redaction's parts and erased sessions (redacted_copies.py, erased_copies.py) -------

TEXT = "removed-text-5e6f7a8b"


#: How a view or a trajectory holds a message's content: inside a longer text.
CELL = f"user: {TEXT} said."


def _views(tmp_path: Path, data: Path, mine: uuid.UUID, theirs: uuid.UUID) -> tuple[Path, Path]:
    """A view's CSV holding CELL in a row of each session, and an ATIF file of ``mine``."""
    view = tmp_path / "view.csv"
    with view.open("w", newline="") as out:
        csv.writer(out, lineterminator="\n").writerows(
            [["session_id", "text"], [str(mine), CELL], [str(theirs), CELL]]
        )
    atif = tmp_path / "trajectory.json"
    atif.write_text(json.dumps({"steps": [{"message": CELL}, {"message": "ok"}]}))
    record_written(data, view, "csv", view="messages")
    record_written(data, atif, "atif", sessions=[mine])
    return view, atif


async def test_a_redactions_parts_leave_every_copy(store: EventStore, tmp_path: Path) -> None:
    """A real redaction's records (a field, a prompt message, a blob) take the database's
    markers in an export of the session; a part of another archive's event takes its marker
    there; the views and the ATIF file lose the strings read before the redaction."""
    data, session, other = tmp_path / "data", uuid.uuid4(), uuid.uuid4()
    message = {"role": "user", "content": f"only {TEXT}"}
    key = hashlib.sha256(stored_json(stored_form(message)).encode()).hexdigest()
    await store.put_messages([key], [stored_json(stored_form(message))])
    await store.append(
        session,
        [
            SessionCreated(title="kept"),
            Message(content=f"{TEXT} said"),
            LlmCall(model="m", fingerprint="f" * 64, prompt=[key]),
            RunOutput(output="a long line\n" * 10_000 + TEXT, exit_code=0),
        ],
    )
    export = tmp_path / "session.jsonl"
    with export.open("w") as out:
        await export_sessions(store, [session], out)
    record_written(data, export, "sessions", sessions=[session])
    archived = SessionBlock(session_id=other)
    line = archived.event("message", {"content": f"archived {TEXT}"})
    archive = write_archive(tmp_path / "archive", KEY, archived, titles={str(other): "quiet"})
    record_written(data, archive, "archive", sessions=[other])
    view, atif = _views(tmp_path, data, session, uuid.uuid4())  # another session's row

    texts: list[str] = []
    records = []
    for seq, path in ((2, "/content"), (3, "/prompt/0"), (4, "/output")):
        texts += await texts_of_part(store, session, seq, path)
        records += await store.redact(session, seq, path, reason="leaked", user="ops")
    assert f"only {TEXT}" in texts and "user" not in texts  # a message's text, not its role
    _, marker = with_marker(line.stored, "/content", line.event_id.bytes)
    in_archive = RedactedPart(session_id=other, seq=1, path="/content", removed=marker[REDACTED])
    parts = [RedactedPart.of(record) for record in records] + [in_archive]
    report = await remove_parts_on_disk(store, parts, texts, data_dir=data, key=KEY)

    assert not report.left and report.problems == [], report
    changed = {Path(c.path).name: c.removed for c in report.changes}
    assert changed["session.jsonl"] == [
        f"seq 2 /content of session {session}",
        f"seq 3 /prompt/0 of session {session}",
        f"seq 4 /output of session {session}",
        f"prompt message {key[:12]}...",
    ]
    assert changed["archive"] == [f"seq 1 /content of session {other}"]
    assert changed["view.csv"] == ["the removed text at line 2 (text)"]  # not their row
    assert sorted(changed) == ["archive", "session.jsonl", "trajectory.json", "view.csv"]
    assert check_file(export).ok and TEXT not in export.read_text()
    in_db = await store.read(session)
    for event in (json.loads(x) for x in export.read_text().splitlines()[2:]):
        assert event["hash"] == in_db[event["seq"] - 1].hash.hex()
        assert event.get("stored_payload") == in_db[event["seq"] - 1].stored_payload or (
            "stored_payload" not in event
        )
    assert check_directory(archive, KEY.public_key()).ok and not _holds_text(archive)
    assert TEXT not in atif.read_text()
    assert [row[1] for row in csv.reader(view.open())] == ["text", "[redacted]", CELL]
    again = await remove_parts_on_disk(store, parts, texts, data_dir=data, key=KEY)
    assert again.changes == [] and again.problems == []  # nothing more to do


def _holds_text(path: Path) -> bool:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return any(TEXT.encode() in p.read_bytes() for p in files)


async def test_erased_sessions_leave_every_copy_but_a_kept_archive(
    store: EventStore, database_url: str, settings: Settings, tmp_path: Path
) -> None:
    """An erased session goes from an export (what is left verifies), a view's rows and its
    ATIF file; from the archive the database records (made anew with its record; the other
    session still verifies against it), unless the archive is kept (a retention policy's)."""
    data = tmp_path / "data"
    erased, kept = uuid.uuid4(), uuid.uuid4()
    for session, title in ((erased, TEXT), (kept, "stays")):
        await store.append(
            session,
            [
                SessionCreated(title=title),
                Run(command=f"echo {title}"),
                AgentState(state="finished"),
            ],
        )
    export = tmp_path / "both.jsonl"
    with export.open("w") as out:
        await export_sessions(store, [erased, kept], out)
    record_written(data, export, "sessions", sessions=[erased, kept])
    only = tmp_path / "only.jsonl"
    with only.open("w") as out:
        await export_sessions(store, [erased], out)
    record_written(data, only, "sessions", sessions=[erased])
    view, atif = _views(tmp_path, data, erased, kept)
    directory = tmp_path / "archive"
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as owner:
        request = ArchiveRequest(
            before=datetime.now(UTC),
            directory=directory,
            actor=ACTOR,
            detach=False,
            only=frozenset({erased, kept}),
        )
        outcome = await archive_sessions(owner, request, KEY, lambda text, *, steady=False: None)
        assert outcome is not None
        await erase_session(owner, erased, key=KEY, actor="ops", via="cli", policy="manual: t")

    first = await remove_sessions_on_disk(store, [erased], data_dir=data, key=KEY, keep=[directory])
    assert first.notes == [
        f"{directory}: kept as it is: the archive the retention policy wrote before erasing is "
        "the record it keeps"
    ]
    assert _holds_text(directory) and not first.left and first.problems == [], first
    changed = {Path(c.path).name: c for c in first.changes}
    assert sorted(changed) == ["both.jsonl", "only.jsonl", "trajectory.json", "view.csv"]
    assert changed["both.jsonl"].removed == [f"session {erased}"]
    assert changed["only.jsonl"].deleted and changed["trajectory.json"].deleted
    assert not only.exists() and not atif.exists()
    report = check_file(export)
    assert report.ok and [s.session_id for s in report.sessions] == [kept]
    assert not _holds_text(export)
    assert [row[0] for row in csv.reader(view.open())] == ["session_id", str(kept)]

    unsigned = await remove_sessions_on_disk(store, [erased], data_dir=data, key=None)
    [left] = unsigned.left
    assert (left.path, left.removed, left.rewritten) == (
        str(directory),
        [f"session {erased}"],
        False,
    )
    assert "anchor key is missing" in left.left[0] and _holds_text(directory)

    second = await remove_sessions_on_disk(store, [erased], data_dir=data, key=KEY)
    assert [(c.path, c.removed, c.rewritten) for c in second.changes] == [
        (str(directory), [f"session {erased}"], True)
    ]
    assert not second.left and not _holds_text(directory)
    proved = check_directory(directory, KEY.public_key())
    assert proved.ok, proved.reason
    assert [s.session_id for s in proved.sessions] == [kept]
    verified = await store.verify(kept)
    assert verified.ok and verified.archived is not None
    assert verified.archived.manifest == proved.manifest_sha256
    assert _hidden(tmp_path) == []
