"""A secret redacted from an export file's lines (app/store/on_disk/export_file.py): every
chain-2 event that held it, plainly, escaped, in a blob's text or as a dropped prompt
message's name, takes the marker the database would put there, and the file still verifies;
what cannot go (a chain-1 event, an object's key) stays and is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.events.commitment import marker, markers_in
from app.events.stored_form import REDACTED
from app.store.archive import check_file
from app.store.on_disk.export_file import ExportLines, redact_export
from app.store.on_disk.forms import in_bytes
from app.store.on_disk.replacing import NotRewritten
from tests.support.export_files import SessionBlock, write_export

#: A quote, a backslash and a non-ASCII letter: each written escaped somewhere.
SECRET = 'sk-"live"\\token-é-4242'


def _holds(data: bytes) -> bool:
    return any(form in data for form in in_bytes(SECRET))


@pytest.fixture
def export(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    block = SessionBlock()
    block.event("session.created", {"title": "a session"})
    old = block.event("message", {"content": f"before 0029: {SECRET}"}, chain=1)
    run = block.event("run", {"command": f"export TOKEN={SECRET}", "timeout": 30})
    blob = block.event("run.output", {"output": "x" * 2000 + SECRET, "exit_code": 0})
    nul = block.event("run.output", {"output": f"a\x00b {SECRET}", "exit_code": 1})
    leaked = block.message({"role": "user", "content": f"use {SECRET}"})
    kept = block.message({"role": "system", "content": "be careful"})
    call = block.event("llm.call", {"model": "m", "prompt": [kept, leaked], "response": {}})
    keyed = block.event("run", {"env": {SECRET: "set"}, "command": "env"})
    other = SessionBlock()
    other.event("message", {"content": "nothing here"})
    path = write_export(tmp_path / "out.jsonl", block, other)
    return path, {
        "old": old, "run": run, "blob": blob, "nul": nul, "call": call, "keyed": keyed,
        "leaked": leaked, "kept": kept,
    }  # fmt: skip


def _events(path: Path) -> dict[int, dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return {(line["seq"] if line["type"] == "event" else -1): line for line in lines}


def test_the_secret_goes_from_every_chain_2_place_and_the_file_verifies(
    export: tuple[Path, dict], tmp_path: Path
) -> None:
    path, made = export
    draft = tmp_path / "draft.jsonl"
    state = redact_export(path, draft, SECRET)
    report = check_file(draft)
    assert report.ok, report.reason
    assert [s.events for s in report.sessions] == [7, 1] and report.messages == 1

    assert state.dropped == {made["leaked"]}
    events = _events(draft)
    run = events[made["run"].seq]
    assert run["payload"] == {"command": "[redacted]", "timeout": 30}
    salt = made["run"].event_id.bytes
    assert markers_in(run["stored_payload"]) == [
        ("/command", marker(made["run"].payload["command"], salt)[REDACTED])
    ]
    assert run["hash"] == made["run"].hash  # the chain is as it was
    blob = events[made["blob"].seq]
    assert blob["payload"]["output"] == "[redacted]" and "$blob" not in json.dumps(blob)
    assert events[made["nul"].seq]["payload"]["output"] == "[redacted]"
    call = events[made["call"].seq]
    assert call["payload"]["prompt"] == [made["kept"], "[redacted]"]
    assert [p for p, _ in markers_in(call["stored_payload"])] == ["/prompt/1"]

    # what a marker cannot take stays, and is named with its reason
    text = draft.read_bytes().splitlines()
    still = [number for number, line in enumerate(text, 1) if _holds(line)]
    assert len(still) == 2
    assert len(state.left) == 2
    assert f"event {made['old'].seq} of session" in state.left[0]
    assert "before redaction was possible" in state.left[0]
    assert f"event {made['keyed'].seq} of session" in state.left[1] and "key" in state.left[1]
    original = path.read_bytes().splitlines()
    assert state.found == [n for n, line in enumerate(original, 1) if _holds(line)]
    assert len(state.found) == 6  # 5 events and a prompt message (the call names it by hash)


def test_a_file_that_does_not_verify_is_not_rewritten(
    export: tuple[Path, dict], tmp_path: Path
) -> None:
    path, _ = export
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(path.read_bytes().replace(b"a session", b"A session"))
    with pytest.raises(NotRewritten, match="does not verify as a Chronicle export"):
        redact_export(broken, tmp_path / "draft.jsonl", SECRET)


def test_lines_without_the_secret_come_back_as_they_were() -> None:
    block = SessionBlock()
    block.event("message", {"content": "hello"})
    lines = ExportLines(SECRET)
    from app.store.archive.lines import HeaderLine, dump_line

    raw = [dump_line(line).encode() for line in (HeaderLine(), *block.all_lines())]
    assert [lines.line(n, line) for n, line in enumerate(raw, 1)] == raw
    assert lines.found == [] and lines.left == []
