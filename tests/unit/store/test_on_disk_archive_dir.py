"""A secret taken out of an archive directory (app/store/on_disk/archive_dir.py): the JSONL
redacted with markers, the Parquet made from it again, session_state's cell redacted, the
manifest signed again, and the directory still proves itself with the same key; an archive
signed by another key, or pinned by the database, is left as it was and said so."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pyarrow.parquet
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.archive import check_directory
from app.store.on_disk.archive_dir import found_in_archive, redact_archive
from tests.support.export_files import SessionBlock, write_archive

SECRET = 'ghp_archived\\secret"9'
KEY = Ed25519PrivateKey.generate()


def _archive(directory: Path) -> tuple[Path, SessionBlock]:
    block = SessionBlock()
    block.event("session.created", {"title": f"deploy with {SECRET}"})
    leaked = block.message({"role": "user", "content": f"the key is {SECRET}"})
    block.event("llm.call", {"model": "m", "prompt": [leaked], "response": {}})
    block.event("run.output", {"output": "y" * 3000 + SECRET, "exit_code": 0})
    clean = SessionBlock()
    clean.event("message", {"content": "nothing"})
    titles = {str(block.session_id): f"deploy with {SECRET}", str(clean.session_id): "clean"}
    return write_archive(directory, KEY, block, clean, titles=titles), block


def test_an_archive_loses_the_secret_and_still_proves_itself(tmp_path: Path) -> None:
    archive, block = _archive(tmp_path / "archive")
    (archive / "sessions.jsonl").chmod(0o600)
    assert check_directory(archive, KEY.public_key()).ok
    held = found_in_archive(archive, SECRET)
    assert sorted(held) == [
        "events.parquet", "llm_messages.parquet", "session_state.parquet", "sessions.jsonl",
    ]  # fmt: skip

    findings = redact_archive(archive, SECRET, KEY)
    assert sorted(Path(f.path).name for f in findings) == sorted(held)
    assert all(f.rewritten and not f.problem for f in findings), findings
    assert found_in_archive(archive, SECRET) == {}
    for path in archive.iterdir():
        assert SECRET.encode() not in path.read_bytes()
    report = check_directory(archive, KEY.public_key())
    assert report.ok, report.reason
    assert [s.events for s in report.sessions] == [block.seq, 1]  # heads and anchors unchanged
    assert stat.S_IMODE((archive / "sessions.jsonl").stat().st_mode) == 0o600
    state = pyarrow.parquet.read_table(str(archive / "session_state.parquet"))
    assert state.column("title").to_pylist() == ["[redacted]", "clean"]
    messages = pyarrow.parquet.read_table(str(archive / "llm_messages.parquet"))
    assert messages.num_rows == 0  # the one message held it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive"]  # nothing left beside it


def test_an_archive_that_cannot_be_signed_again_or_is_pinned_stays(tmp_path: Path) -> None:
    archive, _ = _archive(tmp_path / "archive")
    before = {p.name: p.read_bytes() for p in archive.iterdir()}
    other = redact_archive(archive, SECRET, Ed25519PrivateKey.generate())
    assert other and not any(f.rewritten for f in other)
    assert "cannot be signed again without that key" in other[0].problem
    missing = redact_archive(archive, SECRET, None)
    assert "anchor key is missing" in missing[0].problem
    pinned = redact_archive(archive, SECRET, KEY, pinned="the database records it")
    assert {f.problem for f in pinned} == {"the database records it"}
    assert {p.name: p.read_bytes() for p in archive.iterdir()} == before

    broken = tmp_path / "broken"
    shutil.copytree(archive, broken)
    with (broken / "anchors.jsonl").open("a") as file:
        file.write("\n")
    found = redact_archive(broken, SECRET, KEY)
    assert not found[0].rewritten and "does not verify as it is" in found[0].problem
