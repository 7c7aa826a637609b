"""A secret taken out of an archive directory (app/store/on_disk/archive_dir.py): the JSONL
redacted with markers, the Parquet made from it again, session_state's cell redacted, the
manifest signed again, and the directory still proves itself with the same key; an archive
signed by another key is left as it was and said so; a new directory put in place can be put
back (what a failed commit does for an archive the database records)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pyarrow.parquet
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.archive import check_directory
from app.store.on_disk.archive_dir import found_in_archive, prepare_rewrite, redact_archive
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


def test_an_archive_that_cannot_be_signed_again_stays(tmp_path: Path) -> None:
    archive, _ = _archive(tmp_path / "archive")
    before = {p.name: p.read_bytes() for p in archive.iterdir()}
    other = redact_archive(archive, SECRET, Ed25519PrivateKey.generate())
    assert other and not any(f.rewritten for f in other)
    assert "cannot be signed again without that key" in other[0].problem
    missing = redact_archive(archive, SECRET, None)
    assert "anchor key is missing" in missing[0].problem
    assert {p.name: p.read_bytes() for p in archive.iterdir()} == before

    broken = tmp_path / "broken"
    shutil.copytree(archive, broken)
    with (broken / "anchors.jsonl").open("a") as file:
        file.write("\n")
    found = redact_archive(broken, SECRET, KEY)
    assert not found[0].rewritten and "does not verify as it is" in found[0].problem


def test_a_rewrite_put_in_place_can_be_put_back(tmp_path: Path) -> None:
    """What a failed commit does after the new directory took the old one's place: the old
    one back, byte for byte, and the new one gone."""
    archive, _ = _archive(tmp_path / "archive")
    before = {p.name: p.read_bytes() for p in archive.iterdir()}
    rewrite = prepare_rewrite(archive, SECRET, KEY, set(found_in_archive(archive, SECRET)))
    aside = rewrite.put_in_place()
    assert found_in_archive(archive, SECRET) == {}
    assert {p.name: p.read_bytes() for p in aside.iterdir()} == before
    rewrite.put_back(aside)
    rewrite.discard()
    assert {p.name: p.read_bytes() for p in archive.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive"]  # nothing left beside it
