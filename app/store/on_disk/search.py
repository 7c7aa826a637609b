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
- an archive directory is made anew and signed again (``archive_dir``); when the database
  records it (its ``sessions`` rows hold its manifest's sha256), the new directory takes the
  old one's place in the transaction that records the new sha256 (``recorded_archive``).

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
from app.store.on_disk.ledger import Written, WrittenKind, read_ledger
from app.store.on_disk.recorded_archive import redact_recorded_archive
from app.store.on_disk.replacing import NotRewritten, replace_file
from app.store.on_disk.tables import redact_csv, redact_json, redact_parquet

if TYPE_CHECKING:
    from app.store.event_store import EventStore

#: Every archive this database records, whichever sessions were named (one the ledger lists
#: is rewritten with the database's record of it), as its rows spell it.
RECORDED_ARCHIVES_SQL = "SELECT DISTINCT archived_to FROM sessions WHERE archived_at IS NOT NULL"
#: The archives of the sessions searched.
ARCHIVES_SQL = """
SELECT DISTINCT archived_to FROM sessions
WHERE archived_at IS NOT NULL AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[]))
"""


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
    recorded = [row["archived_to"] for row in await store.pool.fetch(RECORDED_ARCHIVES_SQL)]
    scope = list(sessions) if sessions is not None else None
    archives = [row["archived_to"] for row in await store.pool.fetch(ARCHIVES_SQL, scope)]
    targets = _targets(entries, scope, archives)
    spelled = by_absolute_path(recorded)
    report = OnDiskReport(findings=[], searched=[], missing=[], problems=problems)
    for name, kind in sorted(targets.items()):
        path = Path(name)
        if not await asyncio.to_thread(path.exists):
            report.missing.append(name)
            continue
        try:
            report.findings += await _search_one(store, path, kind, value, key, spelled.get(name))
        except (OSError, ChronicleError, ValueError) as exc:
            report.problems.append(f"{name}: could not be searched: {exc}")
            continue
        report.searched.append(name)
    return report


def _targets(
    entries: Sequence[Written], scope: Sequence[UUID] | None, archives: Sequence[str]
) -> dict[str, WrittenKind]:
    """What to search, by absolute path: the ledger's copies that hold a session of
    ``scope`` (all with None; a view's rows may hold any), then the archives not listed."""
    named = set(scope) if scope is not None else None
    targets: dict[str, WrittenKind] = {
        entry.path: entry.kind
        for entry in entries
        if named is None or entry.sessions is None or named & set(entry.sessions)
    }
    for archive in archives:
        targets.setdefault(os.path.abspath(archive), "archive")
    return targets


def by_absolute_path(archived_to: Sequence[str]) -> dict[str, str]:
    """Each recorded archive's absolute path, to the text its rows hold."""
    return {os.path.abspath(spelled): spelled for spelled in archived_to}


async def _search_one(
    store: EventStore,
    path: Path,
    kind: WrittenKind,
    value: str,
    key: Ed25519PrivateKey | None,
    archived_to: str | None,
) -> list[Finding]:
    """The findings of one copy; ``archived_to``: the database records it (as it spells it)."""
    if kind != "archive":
        found = await asyncio.to_thread(redact_file, path, kind, value)
        return [found] if found is not None else []
    if not await asyncio.to_thread(path.is_dir):
        raise NotRewritten("it is not a directory any more")
    if archived_to is not None:
        return await redact_recorded_archive(store, path, archived_to, value, key)
    return await asyncio.to_thread(redact_archive, path, value, key)


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
