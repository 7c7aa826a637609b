"""What a redaction or an erasure did to the copies on this machine's disk, one copy at a
time, and the pieces both walk the copies with.

The copies are those ``chronicle redact --value-file`` searches (``search``): every path the
ledger lists that still exists and holds one of the sessions concerned (a view's rows may
hold any session's, so every view), and every archive directory the database records for
one of them.
"""

from __future__ import annotations

import asyncio
import csv
import os
from collections.abc import Awaitable, Callable, Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel

from app.errors import ChronicleError
from app.store.on_disk.archive_dir import ArchiveEdit, prepare_edit
from app.store.on_disk.ledger import Written, read_ledger
from app.store.on_disk.recorded_archive import replace_recorded
from app.store.on_disk.replacing import NotRewritten, replace_file, sync_directory
from app.store.on_disk.search import ARCHIVES_SQL, RECORDED_ARCHIVES_SQL, by_absolute_path
from app.store.on_disk.view_rows import (
    RowChange,
    csv_changes,
    parquet_changes,
    rewrite_csv_rows,
    rewrite_parquet_rows,
)

if TYPE_CHECKING:
    from app.store.event_store import EventStore

#: Places named in a report line at most (then "and N more").
NAMED_PLACES = 5


class DiskChange(BaseModel):
    """One copy that held what went: what went from it, and what stays, with why."""

    path: str
    #: What went (``seq N /path of session X``, ``session X``), or was to go.
    removed: list[str]
    #: False: the copy was left as it was (``left`` says why).
    rewritten: bool
    #: The file (or directory) went whole: it held nothing else.
    deleted: bool = False
    #: What of it stays, and why.
    left: list[str] = []

    @property
    def cleared(self) -> bool:
        """Rewritten (or deleted), and nothing of it stays."""
        return self.rewritten and not self.left


class DiskChanges(BaseModel):
    """Every copy that held what went, and what became of each."""

    changes: list[DiskChange] = []
    #: Files and directories searched.
    searched: list[str] = []
    #: Listed in the ledger, gone from the disk since.
    missing: list[str] = []
    #: What could not be searched (a ledger line, a file), and why.
    problems: list[str] = []
    #: What was not done, and why, that leaves no copy (an archive a policy keeps, say).
    notes: list[str] = []

    @property
    def left(self) -> list[DiskChange]:
        """The copies that still hold some of it."""
        return [change for change in self.changes if not change.cleared]


#: How one copy is handled: its path, its ledger line, how the database spells it when it
#: records it as an archive; what became of it (None: it held nothing of it).
Handler = Callable[[Path, Written, str | None], Awaitable[DiskChange | None]]


async def each_copy(
    store: EventStore, data_dir: Path, sessions: Collection[UUID], handle: Handler
) -> DiskChanges:
    """``handle`` each copy that may hold one of ``sessions`` (see the module)."""
    entries, problems = await asyncio.to_thread(read_ledger, data_dir)
    recorded = [row["archived_to"] for row in await store.pool.fetch(RECORDED_ARCHIVES_SQL)]
    archives = [row["archived_to"] for row in await store.pool.fetch(ARCHIVES_SQL, list(sessions))]
    spelled = by_absolute_path(recorded)
    report = DiskChanges(problems=problems)
    for name, entry in sorted(_copies(entries, set(sessions), archives).items()):
        path = Path(name)
        if not await asyncio.to_thread(path.exists):
            report.missing.append(name)
            continue
        try:
            change = await handle(path, entry, spelled.get(name))
        except (OSError, ChronicleError, ValueError, csv.Error) as exc:
            report.problems.append(f"{name}: could not be searched: {exc}")
            continue
        report.searched.append(name)
        if change is not None:
            report.changes.append(change)
    return report


def _copies(entries: list[Written], sessions: set[UUID], archives: list[str]) -> dict[str, Written]:
    """The ledger's copies that may hold one of ``sessions`` (every view), then the archives
    the database records for them, by absolute path."""
    copies = {
        entry.path: entry
        for entry in entries
        if entry.sessions is None or sessions & set(entry.sessions)
    }
    for archive in archives:
        path = os.path.abspath(archive)
        copies.setdefault(path, Written(path=path, kind="archive", written_at=datetime.now(UTC)))
    return copies


def places(where: list[str]) -> str:
    """Where, as a report line names it (the first few)."""
    more = len(where) - NAMED_PLACES
    return ", ".join(where[:NAMED_PLACES]) + (f" and {more} more" if more > 0 else "")


def rewrite_file(path: Path, removed: list[str], write: Callable[[Path], None]) -> DiskChange:
    """``path`` replaced by what ``write(draft)`` makes, or left as it was (and why)."""
    try:
        replace_file(path, write)
    except (NotRewritten, ValueError, csv.Error, OSError) as exc:
        return DiskChange(path=str(path), removed=removed, rewritten=False, left=[str(exc)])
    return DiskChange(path=str(path), removed=removed, rewritten=True)


def change_rows(path: Path, kind: str, change: RowChange, what: str) -> DiskChange | None:
    """A view's CSV or Parquet rewritten as ``change`` says (None: no row changes);
    ``what`` names what went (``the rows of ...``), with where."""
    where = csv_changes(path, change) if kind == "csv" else parquet_changes(path, change)
    if not where:
        return None
    rewrite = rewrite_csv_rows if kind == "csv" else rewrite_parquet_rows
    return rewrite_file(
        path, [f"{what} at {places(where)}"], lambda draft: rewrite(path, draft, change)
    )


def delete_file(path: Path, removed: list[str]) -> DiskChange:
    """A file that held nothing but what went, deleted."""
    try:
        path.unlink()
        sync_directory(path.parent)
    except OSError as exc:
        return DiskChange(path=str(path), removed=removed, rewritten=False, left=[str(exc)])
    return DiskChange(path=str(path), removed=removed, rewritten=True, deleted=True)


async def edit_archive(
    store: EventStore,
    directory: Path,
    archived_to: str | None,
    edit: ArchiveEdit,
    key: Ed25519PrivateKey | None,
    removed: list[str],
) -> DiskChange:
    """The archive made anew as ``edit`` says and put in place (with the database's record
    of it when it records it), or left as it was, and why."""
    try:
        rewrite = await asyncio.to_thread(prepare_edit, directory, key, edit)
        if archived_to is not None:
            await replace_recorded(store, rewrite, archived_to)
        else:
            await asyncio.to_thread(rewrite.replace)
    except NotRewritten as exc:
        return DiskChange(path=str(directory), removed=removed, rewritten=False, left=[str(exc)])
    return DiskChange(path=str(directory), removed=removed, rewritten=True, left=rewrite.left)
