"""What `chronicle redact SESSION --seq N`, `erase`, `users erase` and `retention run` print
for the copies on disk (app/cli/on_disk.py): one line per copy that held what went, notes
and a summary on stderr, and exit 1 while a copy still holds some of it."""

from __future__ import annotations

import pytest

from app.cli.on_disk import report_disk_changes
from app.store import DiskChange, DiskChanges


def test_each_copy_says_what_went_or_why_not(capsys: pytest.CaptureFixture[str]) -> None:
    report = DiskChanges(
        changes=[
            DiskChange(path="/x/a.jsonl", removed=["seq 2 /content of session S"], rewritten=True),
            DiskChange(path="/x/b.json", removed=["session S"], rewritten=True, deleted=True),
            DiskChange(
                path="/x/c.jsonl",
                removed=["seq 2 /content of session S"],
                rewritten=True,
                left=["line 4: seq 1 (the whole payload) of session S stays: ..."],
            ),
            DiskChange(path="/x/archive", removed=["session S"], rewritten=False, left=["no key"]),
        ],
        searched=["/x/a.jsonl", "/x/b.json", "/x/c.jsonl", "/x/archive"],
        notes=["/x/kept: kept as it is"],
    )
    assert report_disk_changes(report, as_json=False) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "on disk: /x/a.jsonl: rewritten without seq 2 /content of session S",
        "on disk: /x/b.json: deleted: it held nothing but session S",
        "on disk: /x/c.jsonl: rewritten without seq 2 /content of session S, but line 4: seq 1 "
        "(the whole payload) of session S stays: ...",
        "on disk: /x/archive: still holds session S: no key",
    ]
    assert "on disk: note: /x/kept: kept as it is" in err
    assert "4 held what was removed, 2 rewritten without it" in err
    assert "error: 2 copies on disk still hold what was removed" in err

    cleared = DiskChanges(changes=report.changes[:2], searched=["/x/a.jsonl"])
    assert report_disk_changes(cleared, as_json=True) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [DiskChange.model_validate_json(line) for line in lines] == report.changes[:2]
    assert report_disk_changes(DiskChanges(searched=["/x/a.jsonl"]), as_json=False) == 0
    assert capsys.readouterr() == ("", "")  # nothing held it: nothing to say
