"""What Chronicle wrote to this machine's disk: one line per export or archive, so that a
secret found later is looked for in them too (``chronicle redact --value-file``).

Every ``chronicle export -o FILE`` (sessions, a view, an ATIF trajectory) and every
``chronicle archive -o DIR`` appends a line to ``<data_dir>/exports.jsonl`` once the file is
in place: its absolute path, what kind of file it is, when, and the sessions it holds when it
holds whole sessions. The file is only ever appended to (``O_APPEND``, one ``write`` per line,
so two commands at once do not interleave), is the owner's alone (0600), and a line that
cannot be read is reported, not fatal.

A file beside the data directory, not a table: a path means something only on the machine
whose disk it names, while every machine running ``chronicle`` may share one database; and
an export needs no login that may write tables (a view is exported with the analyst's,
read-only). What went to stdout or over the API is on no disk Chronicle knows of: it is not
listed, and is out of reach.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, ValidationError

from app.store.private_files import SECRET_MODE

LEDGER_NAME = "exports.jsonl"
#: What a listed path holds: a ``chronicle export`` JSONL of whole sessions, a view's rows as
#: CSV or Parquet, an ATIF trajectory (JSON), or a ``chronicle archive`` directory.
WrittenKind = Literal["sessions", "csv", "parquet", "atif", "archive"]


class Written(BaseModel):
    """One line of the ledger: a file (or directory) Chronicle wrote."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    path: str
    kind: WrittenKind
    written_at: datetime
    #: The sessions it holds; None when it holds rows of a view, not whole sessions.
    sessions: list[UUID] | None = None
    #: The view it holds the rows of (``export --view``).
    view: str | None = None


def ledger_path(data_dir: Path) -> Path:
    return data_dir.expanduser() / LEDGER_NAME


def record_written(
    data_dir: Path,
    path: Path,
    kind: WrittenKind,
    *,
    sessions: Sequence[UUID] | None = None,
    view: str | None = None,
) -> Path:
    """Append ``path`` (made absolute) to the ledger; the ledger's path. Raises ``OSError``
    when the data directory cannot be written."""
    entry = Written(
        path=os.path.abspath(path),
        kind=kind,
        written_at=datetime.now(UTC),
        sessions=list(sessions) if sessions is not None else None,
        view=view,
    )
    ledger = ledger_path(data_dir)
    ledger.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    line = (entry.model_dump_json(exclude_none=True) + "\n").encode("utf-8")
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, SECRET_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, SECRET_MODE)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return ledger


def read_ledger(data_dir: Path) -> tuple[list[Written], list[str]]:
    """Every path the ledger lists, the latest line of each (a path written twice is one
    file), and the problems of lines that could not be read (``line N: why``)."""
    ledger = ledger_path(data_dir)
    try:
        text = ledger.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"cannot read {ledger}: {exc.strerror}"]
    latest: dict[str, Written] = {}
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = Written.model_validate_json(line)
        except ValidationError as exc:
            problems.append(f"{ledger} line {number}: not a ledger line ({exc.errors()[0]['msg']})")
            continue
        latest.pop(entry.path, None)
        latest[entry.path] = entry
    return list(latest.values()), problems
