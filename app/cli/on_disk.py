"""The copies of the log Chronicle writes to disk, from the commands: each export or archive
noted in the data directory's ledger when it is written, a secret's search of them reported
(``chronicle redact --value-file``), and what a redaction or an erasure removed from them
(``chronicle redact SESSION --seq N``, ``erase``, ``users erase``, ``retention run``;
app/store/on_disk/)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from app.config import Settings

if TYPE_CHECKING:
    from app.store import DiskChange, DiskChanges, OnDiskReport, WrittenKind


def note_written(
    settings: Settings,
    path: Path,
    kind: WrittenKind,
    *,
    sessions: Sequence[UUID] | None = None,
    view: str | None = None,
) -> None:
    """``path`` recorded in the ledger; a warning (never a failure: the file is written)
    when it cannot be."""
    from app.store import record_written

    try:
        record_written(settings.data_dir, path, kind, sessions=sessions, view=view)
    except OSError as exc:
        print(
            f"warning: {path} was written but could not be recorded in the data directory "
            f"({exc}): `chronicle redact --value-file` will not look in it",
            file=sys.stderr,
        )


def report_on_disk(report: OnDiskReport, *, as_json: bool) -> int:
    """Each file that held the value, on stdout; a summary on stderr; 1 when the disk still
    holds it somewhere, or a copy could not be searched."""
    for finding in report.findings:
        if as_json:
            print(finding.model_dump_json())
            continue
        where = ", ".join(finding.found_at)
        if not finding.rewritten:
            outcome = f"found, not rewritten: {finding.problem}"
        elif finding.problem:
            outcome = f"rewritten, but {finding.problem}"
        else:
            outcome = "rewritten without it"
        print(f"on disk: {finding.path}: found at {where}; {outcome}")
    for problem in report.problems:
        print(f"on disk: {problem}", file=sys.stderr)
    gone = f" ({len(report.missing)} listed are gone)" if report.missing else ""
    cleared = len(report.findings) - len(report.left)
    print(
        f"searched {len(report.searched)} copies on disk{gone}: the value was in "
        f"{len(report.findings)} files, {cleared} rewritten without it",
        file=sys.stderr,
    )
    if report.left or report.problems:
        print(
            f"error: the value is still on disk in {len(report.left)} files (listed above)"
            + (
                f", and {len(report.problems)} copies could not be searched"
                if report.problems
                else ""
            ),
            file=sys.stderr,
        )
        return 1
    return 0


def _outcome(change: DiskChange) -> str:
    """What became of one copy, as its report line says it."""
    what = ", ".join(change.removed)
    left = "; ".join(change.left)
    if not change.rewritten:
        return f"still holds {what}: {left}" if what else f"not rewritten: {left}"
    done = f"deleted: it held nothing but {what}" if change.deleted else f"rewritten without {what}"
    return f"{done}, but {left}" if left else done


def report_disk_changes(report: DiskChanges, *, as_json: bool) -> int:
    """Each copy that held what a redaction or an erasure removed, on stdout (``on disk:
    PATH: rewritten without ...``, or why not); notes and a summary on stderr; 1 while a
    copy still holds some of it, or one could not be searched."""
    for change in report.changes:
        if as_json:
            print(change.model_dump_json())
        else:
            print(f"on disk: {change.path}: {_outcome(change)}")
    for note in report.notes:
        print(f"on disk: note: {note}", file=sys.stderr)
    for problem in report.problems:
        print(f"on disk: {problem}", file=sys.stderr)
    if not report.changes and not report.problems:
        return 0
    gone = f" ({len(report.missing)} listed are gone)" if report.missing else ""
    cleared = len(report.changes) - len(report.left)
    print(
        f"on disk: searched {len(report.searched)} copies{gone}: {len(report.changes)} held "
        f"what was removed, {cleared} rewritten without it",
        file=sys.stderr,
    )
    if report.left or report.problems:
        print(
            f"error: {len(report.left)} copies on disk still hold what was removed (listed "
            "above)"
            + (f", and {len(report.problems)} could not be searched" if report.problems else ""),
            file=sys.stderr,
        )
        return 1
    return 0
