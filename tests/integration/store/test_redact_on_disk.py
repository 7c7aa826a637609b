"""A secret searched for in the copies the ledger lists (app/store/on_disk/search.py): an
export file, a view's CSV and an archive directory the database does not record are each
rewritten without it; a path gone from the disk is reported; with sessions named, only the
copies that hold one of them (and the views) are searched."""

from __future__ import annotations

import csv
import uuid
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store import EventStore, record_written, redact_on_disk
from app.store.archive import check_directory, check_file
from app.store.on_disk.forms import in_bytes
from tests.support.export_files import SessionBlock, write_archive, write_export

SECRET = "xoxb-ledger-'secret'-1234"
KEY = Ed25519PrivateKey.generate()


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
