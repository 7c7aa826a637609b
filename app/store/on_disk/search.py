"""A value looked for in every copy of the log Chronicle wrote to this machine's disk, and
removed where it can be (``chronicle redact --value-file``; docs/erasure.md).

The copies are every path the ledger lists that still exists (``app.store.on_disk.ledger``)
and every directory the database records as a session's archive (``sessions.archived_to``).
With sessions named, only the copies that hold one of them, and the views' rows (which hold
any session's). Each file is searched however it was written (``forms``), and one that holds
the value is rewritten whole without it, or reported with the reason it was not:

- an export of sessions keeps its chain: markers where the database puts them
  (``export_file``);
- a view's CSV or Parquet and an ATIF trajectory get ``[redacted]`` in each cell (or string)
  that held it (``tables``);
- an archive directory is made anew and signed again (``archive_dir``), unless the database
  records it: its ``sessions`` rows hold its manifest's sha256, which nothing may change (the
  archived head's trigger, 0027), so a new manifest would leave the database naming bytes
  that are gone. Such an archive is reported, "found, not rewritten", with that reason.

A file is then searched again, and what it still holds is reported too: the report says what
is on the disk, not what was meant.
"""

from __future__ import annotations

import asyncio
import csv
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel

from app.errors import ChronicleError
from app.store.on_disk.archive_dir import redact_archive
from app.store.on_disk.export_file import redact_export
from app.store.on_disk.findings import Finding, where_in_file
from app.store.on_disk.ledger import WrittenKind, read_ledger
from app.store.on_disk.replacing import NotRewritten, replace_file
from app.store.on_disk.tables import redact_csv, redact_json, redact_parquet

if TYPE_CHECKING:
    from app.store.event_store import EventStore

#: Every archive this database records (whichever sessions were named: one pins it).
RECORDED_ARCHIVES_SQL = "SELECT DISTINCT archived_to FROM sessions WHERE archived_at IS NOT NULL"
#: The archives of the sessions searched.
ARCHIVES_SQL = """
SELECT DISTINCT archived_to FROM sessions
WHERE archived_at IS NOT NULL AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[]))
"""
PINNED = (
    "the database records this archive by its manifest's sha256 (sessions.archive_manifest), "
    "which nothing may change yet: a rewritten archive would not be the one it names "
    '(docs/erasure.md, "Exports on disk")'
)


def _whole_cells(
    rewrite: Callable[[Path, Path, str], None],
) -> Callable[[Path, Path, str], list[str]]:
    """A rewrite that takes whole cells (or strings): it leaves nothing it knows of (the
    search after it finds what it did not)."""

    def run(source: Path, draft: Path, value: str) -> list[str]:
        rewrite(source, draft, value)
        return []

    return run


#: Each kind's rewrite, from the file to a draft; what of the value it could not take out.
REWRITERS: dict[str, Callable[[Path, Path, str], list[str]]] = {
    "sessions": lambda source, draft, value: redact_export(source, draft, value).left,
    "csv": _whole_cells(redact_csv),
    "parquet": _whole_cells(redact_parquet),
    "atif": _whole_cells(redact_json),
}


class OnDiskReport(BaseModel):
    """Where the value was on the disk, and what became of each file."""

    findings: list[Finding]
    #: Files and directories searched.
    searched: list[str]
    #: Listed in the ledger, gone from the disk since.
    missing: list[str]
    #: What could not be searched (a ledger line, a file), and why.
    problems: list[str]

    @property
    def left(self) -> list[Finding]:
        """The files that still hold the value."""
        return [finding for finding in self.findings if not finding.cleared]


async def redact_on_disk(
    store: EventStore,
    value: str,
    *,
    data_dir: Path,
    sessions: Sequence[UUID] | None,
    key: Ed25519PrivateKey | None,
) -> OnDiskReport:
    """Find ``value`` in the copies on this machine's disk and remove it where it can be
    (see the module); ``key`` signs a rewritten archive's manifest (the anchor key)."""
    entries, problems = await asyncio.to_thread(read_ledger, data_dir)
    scope = set(sessions) if sessions is not None else None
    targets: dict[str, WrittenKind] = {
        entry.path: entry.kind
        for entry in entries
        if scope is None or entry.sessions is None or scope & set(entry.sessions)
    }
    recorded = [row["archived_to"] for row in await store.pool.fetch(RECORDED_ARCHIVES_SQL)]
    archives = await store.pool.fetch(ARCHIVES_SQL, list(scope) if scope is not None else None)
    return await asyncio.to_thread(
        _search, targets, [row["archived_to"] for row in archives], recorded, value, key, problems
    )


def _search(
    targets: dict[str, WrittenKind],
    archives: list[str],
    recorded: list[str],
    value: str,
    key: Ed25519PrivateKey | None,
    problems: list[str],
) -> OnDiskReport:
    for archive in archives:
        targets.setdefault(os.path.abspath(archive), "archive")
    pinned = {os.path.abspath(archive) for archive in recorded}
    report = OnDiskReport(findings=[], searched=[], missing=[], problems=problems)
    for name, kind in sorted(targets.items()):
        path = Path(name)
        if not path.exists():
            report.missing.append(name)
            continue
        try:
            if kind == "archive":
                if not path.is_dir():
                    raise NotRewritten("it is not a directory any more")
                reason = PINNED if name in pinned else ""
                report.findings += redact_archive(path, value, key, pinned=reason)
            else:
                found = redact_file(path, kind, value)
                if found is not None:
                    report.findings.append(found)
        except (OSError, ChronicleError, ValueError) as exc:
            report.problems.append(f"{name}: could not be searched: {exc}")
            continue
        report.searched.append(name)
    return report


def redact_file(path: Path, kind: WrittenKind, value: str) -> Finding | None:
    """Remove ``value`` from one file the ledger lists (of ``kind``); None when it holds
    none of it."""
    found = where_in_file(path, value)
    if not found:
        return None
    rewrite = REWRITERS[kind]
    left: list[str] = []

    def write(draft: Path) -> None:
        left.extend(rewrite(path, draft, value))

    try:
        replace_file(path, write)
    except (NotRewritten, ValueError, csv.Error, OSError) as exc:
        return Finding(path=str(path), found_at=found, rewritten=False, problem=str(exc))
    still = where_in_file(path, value)
    problem = ([f"still holds it at {', '.join(still)}"] if still else []) + left
    return Finding(path=str(path), found_at=found, rewritten=True, problem="; ".join(problem))
