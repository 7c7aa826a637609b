"""What a redaction or an erasure removed, removed from the files on disk as pure files
(app/store/on_disk/): a redaction's parts in an export's lines (part_lines: the database's
marker, a message no call names dropped, what cannot go named), erased sessions' blocks
(session_lines: a message a later session needs kept), a view's rows (view_rows: dropped, or
scrubbed in the rows of the sessions concerned only), and an archive made anew either way
(archive_dir.prepare_edit: manifest, anchors, Parquet and session_state follow)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from uuid import UUID

import pyarrow
import pyarrow.parquet
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.events.commitment import markers_in
from app.events.commitment import redact as with_marker
from app.events.stored_form import REDACTED
from app.store.archive import check_directory, check_file, read_manifest
from app.store.archive.lines import EventLine
from app.store.on_disk.archive_dir import ArchiveEdit, prepare_edit
from app.store.on_disk.part_lines import rewrite_parts
from app.store.on_disk.redacted_parts import RedactedPart, worth_looking_for
from app.store.on_disk.session_lines import anchors_without, plan_without, write_without
from app.store.on_disk.view_rows import (
    RowChange,
    csv_changes,
    parquet_changes,
    rewrite_csv_rows,
    rewrite_parquet_rows,
)
from tests.support.export_files import SessionBlock, write_archive, write_export

TEXT = "field-secret-9f8e7d"
KEY = Ed25519PrivateKey.generate()


def _part(line: EventLine, path: str) -> RedactedPart:
    """The part the database would record for ``path`` of this event."""
    _, marker = with_marker(line.stored, path, line.event_id.bytes)
    return RedactedPart(
        session_id=line.session_id, seq=line.seq, path=path, removed=marker[REDACTED]
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_redactions_parts_take_the_databases_markers_and_the_file_verifies(
    tmp_path: Path,
) -> None:
    block = SessionBlock()
    block.event("session.created", {"title": "kept title"})
    old = block.event("message", {"content": f"before 0029: {TEXT}"}, chain=1)
    said = block.event("message", {"content": f"{TEXT} and more", "user": "dora"})
    long = block.event("run.output", {"output": "x" * 2000 + TEXT, "exit_code": 0})
    only = block.message({"role": "user", "content": f"only here {TEXT}"})
    shared = block.message({"role": "user", "content": "shared"})
    call = block.event("llm.call", {"model": "m", "prompt": [only, shared], "response": {}})
    other = SessionBlock()
    other.event("llm.call", {"model": "m", "prompt": [shared], "response": {}})
    path = write_export(tmp_path / "out.jsonl", block, other)
    wrong = _part(said, "/user").model_copy(update={"removed": "0" * 64})
    parts = [
        _part(said, "/content"),
        _part(long, "/output"),
        _part(call, "/prompt/0"),
        _part(other.lines[0], "/prompt/0"),
        wrong,
        _part(old, ""),
    ]

    draft = tmp_path / "draft.jsonl"
    plan = rewrite_parts(path, draft, parts)
    report = check_file(draft)
    assert report.ok, report.reason
    assert plan.done == [p.describe() for p in parts[:4]]
    assert plan.dropped == [only]  # no call of the file names it any more; "shared" the
    assert report.messages == 1  # first session's call still names
    assert len(plan.left) == 2
    assert "(the whole payload)" in plan.left[0] and "before migration 0029" in plan.left[0]
    assert "seq 3 /user" in plan.left[1] and "not this database's event" in plan.left[1]
    events = {(e["session_id"], e["seq"]): e for e in _lines(draft) if e["type"] == "event"}
    mine = str(block.session_id)
    assert events[(mine, said.seq)]["payload"] == {"content": "[redacted]", "user": "dora"}
    assert markers_in(events[(mine, said.seq)]["stored_payload"]) == [
        ("/content", parts[0].removed)
    ]
    assert events[(mine, long.seq)]["payload"]["output"] == "[redacted]"
    assert events[(mine, call.seq)]["payload"]["prompt"] == ["[redacted]", shared]
    assert events[(mine, said.seq)]["hash"] == said.hash  # the chain is as it was
    text = draft.read_text()
    assert f"{TEXT} and more" not in text and "only here" not in text
    assert "before 0029" in text  # the chain-1 event, named in left

    again = rewrite_parts(draft, tmp_path / "again.jsonl", parts[:4])
    assert not again.changes and again.done == [] and again.left == []


def test_erased_sessions_leave_an_export_and_a_later_sessions_message_stays(
    tmp_path: Path,
) -> None:
    erased, kept, gone = SessionBlock(), SessionBlock(), SessionBlock()
    needed = erased.message({"role": "user", "content": "needed later"})
    private = erased.message({"role": "user", "content": f"private {TEXT}"})
    erased.event("llm.call", {"model": "m", "prompt": [needed, private], "response": {}})
    kept.event("llm.call", {"model": "m", "prompt": [needed], "response": {}})
    gone.event("message", {"content": TEXT})
    path = write_export(tmp_path / "out.jsonl", erased, kept, gone)
    sessions = {erased.session_id, gone.session_id}

    plan = plan_without(path, sessions)
    assert plan.found == [erased.session_id, gone.session_id]
    assert plan.kept == [kept.session_id] and plan.named == {needed}
    draft = tmp_path / "draft.jsonl"
    write_without(path, draft, sessions, plan)
    report = check_file(draft)
    assert report.ok, report.reason
    assert [s.session_id for s in report.sessions] == [kept.session_id]
    assert report.messages == 1 and TEXT not in draft.read_text()

    anchors = tmp_path / "anchors.jsonl"
    anchors.write_text(
        "".join(json.dumps({"session_id": str(s.session_id)}) + "\n" for s in (erased, kept))
    )
    anchors_without(anchors, tmp_path / "left.jsonl", sessions)
    assert _lines(tmp_path / "left.jsonl") == [{"session_id": str(kept.session_id)}]


def test_a_views_rows_are_dropped_or_scrubbed_for_the_sessions_named_only(
    tmp_path: Path,
) -> None:
    mine, theirs = "6f1c2a3b-0000-4000-8000-000000000001", "6f1c2a3b-0000-4000-8000-000000000002"
    view = tmp_path / "view.csv"
    with view.open("w", newline="") as out:
        csv.writer(out, lineterminator="\n").writerows(
            [["session_id", "text"], [mine, f"a {TEXT}"], [theirs, f"a {TEXT}"], [mine, "x"]]
        )
    scrub = RowChange.scrubbing([UUID(mine)], [TEXT])
    assert csv_changes(view, scrub) == ["line 2 (text)"]  # not their row
    rewrite_csv_rows(view, tmp_path / "scrubbed.csv", scrub)
    rows = list(csv.reader((tmp_path / "scrubbed.csv").open()))
    assert rows[1] == [mine, "[redacted]"] and rows[2] == [theirs, f"a {TEXT}"]
    drop = RowChange.dropping([UUID(mine)])
    assert csv_changes(view, drop) == ["line 2", "line 4"]
    rewrite_csv_rows(view, tmp_path / "dropped.csv", drop)
    assert [r[0] for r in csv.reader((tmp_path / "dropped.csv").open())] == ["session_id", theirs]

    table = pyarrow.table(
        {"session_id": [mine, theirs, mine], "text": [TEXT, TEXT, None], "n": [1, 2, 3]}
    )
    parquet = tmp_path / "view.parquet"
    pyarrow.parquet.write_table(table, str(parquet), row_group_size=2)
    assert parquet_changes(parquet, scrub) == ["row 1 (text)"]
    assert parquet_changes(parquet, drop) == ["row 1", "row 3"]
    rewrite_parquet_rows(parquet, tmp_path / "dropped.parquet", drop)
    back = pyarrow.parquet.read_table(str(tmp_path / "dropped.parquet"))
    assert back.schema == table.schema and back.column("n").to_pylist() == [2]
    no_column = tmp_path / "usage.csv"
    no_column.write_text(f"day,model\n2026-01-01,{TEXT}\n")
    assert csv_changes(no_column, drop) == []  # no session's rows to drop
    assert csv_changes(no_column, scrub) == ["line 2 (model)"]  # any row may hold it

    assert worth_looking_for([TEXT, "short", TEXT, "tiny"]) == ([TEXT], 2)


def test_an_archive_made_anew_without_an_erased_session_proves_itself(tmp_path: Path) -> None:
    erased, kept = SessionBlock(), SessionBlock()
    erased.event("message", {"content": TEXT})
    kept.event("message", {"content": "stays"})
    titles = {str(erased.session_id): TEXT, str(kept.session_id): "stays"}
    archive = write_archive(tmp_path / "archive", KEY, erased, kept, titles=titles)
    sessions = {erased.session_id}

    def jsonl(source: Path, target: Path) -> list[str]:
        write_without(source, target, sessions, plan_without(source, sessions))
        return []

    drop = RowChange.dropping(sessions)
    edit = ArchiveEdit(
        jsonl=jsonl,
        state=lambda source, target: rewrite_parquet_rows(source, target, drop),
        anchors=lambda source, target: anchors_without(source, target, sessions),
        dropped=frozenset(sessions),
    )
    prepare_edit(archive, KEY, edit).replace()
    report = check_directory(archive, KEY.public_key())
    assert report.ok, report.reason
    assert [s.session_id for s in report.sessions] == [kept.session_id]
    manifest, _ = read_manifest(archive)
    assert manifest.events == 1 and [s.session_id for s in manifest.sessions] == [kept.session_id]
    assert not [p for p in archive.iterdir() if TEXT.encode() in p.read_bytes()]
    assert str(erased.session_id) not in (archive / "anchors.jsonl").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive"]  # nothing left beside it
