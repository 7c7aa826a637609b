"""The pieces of a search of the disk (app/store/on_disk/): the forms a value is written in,
the ledger of what was written, a file replaced whole or not at all, and a value taken out
of a view's CSV and Parquet and of a JSON document, cell by cell."""

from __future__ import annotations

import csv
import json
import os
import stat
import uuid
from pathlib import Path

import pyarrow
import pyarrow.parquet
import pytest

from app.store.on_disk.findings import where_in_file
from app.store.on_disk.forms import in_bytes, in_strings
from app.store.on_disk.ledger import ledger_path, read_ledger, record_written
from app.store.on_disk.replacing import NotRewritten, replace_file
from app.store.on_disk.search import redact_file
from app.store.on_disk.tables import parquet_cells_holding

SECRET = 'pass"word\\with-é'


def test_forms_of_a_value_as_files_write_it() -> None:
    strings = in_strings(SECRET)
    assert SECRET in strings
    assert 'pass\\"word\\\\with-é' in strings  # inside a JSON string
    assert 'pass\\"word\\\\with-\\u00e9' in strings  # in a line that must be ASCII
    raw = in_bytes(SECRET)
    assert 'pass""word\\with-é'.encode() in raw  # a CSV cell
    assert json.dumps(json.dumps(SECRET)[1:-1])[1:-1].encode() in raw  # JSON inside JSON
    lone = "abc\udce9defgh"  # a lone surrogate is only ever written escaped
    assert all(b"\\udce9" in form for form in in_bytes(lone))


def test_the_ledger_lists_each_path_once_and_names_a_bad_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = uuid.uuid4()
    ledger = record_written(data, Path("out.jsonl"), "sessions", sessions=[first])
    record_written(data, tmp_path / "view.csv", "csv", view="llm_calls")
    record_written(data, Path("out.jsonl"), "atif", sessions=[first])  # the same path again
    assert ledger == ledger_path(data)
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    with ledger.open("a") as file:
        file.write("not json\n")
    entries, problems = read_ledger(data)
    assert [(e.path, e.kind) for e in entries] == [
        (str(tmp_path / "view.csv"), "csv"),
        (os.path.abspath("out.jsonl"), "atif"),
    ]
    assert entries[0].view == "llm_calls" and entries[0].sessions is None
    assert entries[1].sessions == [first]
    assert len(problems) == 1 and "line 4: not a ledger line" in problems[0]
    assert read_ledger(tmp_path / "nowhere") == ([], [])


def test_a_file_is_replaced_whole_keeping_its_mode_or_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "file.txt"
    path.write_text("old")
    path.chmod(0o640)
    replace_file(path, lambda draft: draft.write_text("new"))
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640

    def fails(draft: Path) -> None:
        draft.write_text("half")
        raise NotRewritten("no")

    with pytest.raises(NotRewritten):
        replace_file(path, fails)
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]  # no draft left
    link = tmp_path / "link.txt"
    link.symlink_to(path)
    with pytest.raises(NotRewritten, match="symbolic link"):
        replace_file(link, lambda draft: None)


def test_a_view_as_csv_loses_each_cell_holding_the_value(tmp_path: Path) -> None:
    path = tmp_path / "view.csv"
    with path.open("w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerows([["id", "text"], ["1", f"it was {SECRET} here"], ["2", 'clean, "quoted"']])
    before = path.read_bytes().splitlines()
    found = redact_file(path, "csv", SECRET)
    assert found is not None and found.found_at == ["line 2"] and found.cleared
    after = path.read_bytes().splitlines()
    assert after == [before[0], b"1,[redacted]", before[2]]


def test_a_view_as_parquet_loses_each_cell_holding_the_value(tmp_path: Path) -> None:
    path = tmp_path / "view.parquet"
    table = pyarrow.table(
        {
            "n": [1, 2, 3],
            "payload": ['{"a":1}', json.dumps({"command": SECRET}), None],
            "tags": [["x"], [], [f"a {SECRET}"]],
        }
    )
    pyarrow.parquet.write_table(table, str(path), row_group_size=2)
    assert parquet_cells_holding(path, SECRET) == ["row 2 (payload)", "row 3 (tags)"]
    found = redact_file(path, "parquet", SECRET)
    assert found is not None and found.cleared
    back = pyarrow.parquet.read_table(str(path))
    assert back.schema == table.schema
    assert back.column("payload").to_pylist() == ['{"a":1}', "[redacted]", None]
    assert back.column("tags").to_pylist() == [["x"], [], ["[redacted]"]]
    assert where_in_file(path, SECRET) == []


def test_a_json_document_loses_each_string_holding_the_value(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    document = {"steps": [{"message": f"ran {SECRET}"}, {"message": "fine"}], "n": 2}
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    found = redact_file(path, "atif", SECRET)
    assert found is not None and found.cleared and found.found_at == ["line 4"]
    assert json.loads(path.read_text())["steps"] == [{"message": "[redacted]"}, {"message": "fine"}]
    assert redact_file(path, "atif", SECRET) is None  # nothing more to find
    not_json = tmp_path / "broken.json"
    not_json.write_text(f"{{{SECRET}")
    kept = redact_file(not_json, "atif", SECRET)
    assert kept is not None and not kept.rewritten and "Expecting" in kept.problem
