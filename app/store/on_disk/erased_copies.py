"""Erased sessions removed from the copies Chronicle wrote to this machine's disk
(``chronicle erase``, ``chronicle users erase``, ``chronicle retention run``; docs/erasure.md,
"Exports on disk").

Each copy that holds an erased session:

- an export of sessions loses the session's block (``session_lines``), and what is left still
  passes ``chronicle verify --file``; a file that held nothing else is deleted;
- a view's CSV or Parquet loses the rows whose ``session_id`` is an erased session;
- an ATIF trajectory of it is deleted (it is that session);
- an archive directory is made anew without it (JSONL, Parquet, ``session_state``, anchors,
  the manifest's sessions and count), signed again and proved (``archive_dir``), with the
  database's record of its manifest when it has one (``recorded_archive``); one that held
  nothing else is deleted. An archive in ``keep`` stays as it is: the one a retention policy
  wrote before erasing is the record the policy keeps (a note says so).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.on_disk.archive_dir import ArchiveEdit, read_archive_manifest
from app.store.on_disk.disk_changes import (
    DiskChange,
    DiskChanges,
    change_rows,
    delete_file,
    each_copy,
    edit_archive,
    rewrite_file,
)
from app.store.on_disk.ledger import Written
from app.store.on_disk.part_lines import proved
from app.store.on_disk.replacing import sync_directory
from app.store.on_disk.search import by_absolute_path
from app.store.on_disk.session_lines import anchors_without, plan_without, write_without
from app.store.on_disk.view_rows import RowChange, rewrite_parquet_rows

if TYPE_CHECKING:
    from app.store.event_store import EventStore


def _named(sessions: Sequence[UUID]) -> list[str]:
    return [f"session {session}" for session in sessions]


async def remove_sessions_on_disk(
    store: EventStore,
    sessions: Collection[UUID],
    *,
    data_dir: Path,
    key: Ed25519PrivateKey | None,
    keep: Collection[Path] = (),
) -> DiskChanges:
    """Remove the erased ``sessions`` from the copies on this machine's disk (see the
    module); ``key`` signs a rewritten archive's manifest (the anchor key); ``keep``: the
    archive directories that stay as they are."""
    erased = set(sessions)
    if not erased:
        return DiskChanges()
    kept = by_absolute_path([str(path) for path in keep])
    rows = RowChange.dropping(erased)
    notes: list[str] = []

    async def handle(path: Path, entry: Written, archived_to: str | None) -> DiskChange | None:
        if entry.kind == "sessions":
            return await asyncio.to_thread(_in_export, path, erased)
        if entry.kind == "atif":
            held = [s for s in entry.sessions or [] if s in erased]
            return await asyncio.to_thread(delete_file, path, _named(held)) if held else None
        if entry.kind in ("csv", "parquet"):
            return await asyncio.to_thread(
                change_rows, path, entry.kind, rows, "the rows of erased sessions"
            )
        if str(path) in kept:
            notes.append(
                f"{path}: kept as it is: the archive the retention policy wrote before "
                "erasing is the record it keeps"
            )
            return None
        return await _in_archive(store, path, archived_to, erased, key)

    report = await each_copy(store, data_dir, erased, handle)
    report.notes += notes
    return report


def _in_export(path: Path, erased: set[UUID]) -> DiskChange | None:
    plan = plan_without(path, erased)
    if not plan.found:
        return None
    removed = _named(plan.found)
    if not plan.kept:
        return delete_file(path, removed)

    def write(draft: Path) -> None:
        proved(path, "it does not verify as a Chronicle export")
        write_without(path, draft, erased, plan)

    return rewrite_file(path, removed, write)


async def _in_archive(
    store: EventStore,
    directory: Path,
    archived_to: str | None,
    erased: set[UUID],
    key: Ed25519PrivateKey | None,
) -> DiskChange | None:
    manifest = await asyncio.to_thread(read_archive_manifest, directory)
    held = [s.session_id for s in manifest.sessions if s.session_id in erased]
    if not held:
        return None
    removed = _named(held)
    if len(held) == len(manifest.sessions):
        return await asyncio.to_thread(_delete_directory, directory, removed)
    rows = RowChange.dropping(erased)

    def jsonl(source: Path, target: Path) -> list[str]:
        write_without(source, target, erased, plan_without(source, erased))
        return []

    edit = ArchiveEdit(
        jsonl=jsonl,
        state=lambda source, target: rewrite_parquet_rows(source, target, rows),
        anchors=lambda source, target: anchors_without(source, target, erased),
        dropped=frozenset(held),
    )
    return await edit_archive(store, directory, archived_to, edit, key, removed)


def _delete_directory(directory: Path, removed: list[str]) -> DiskChange:
    """An archive that held nothing but erased sessions, deleted."""
    try:
        shutil.rmtree(directory)
        sync_directory(directory.parent)
    except OSError as exc:
        return DiskChange(path=str(directory), removed=removed, rewritten=False, left=[str(exc)])
    return DiskChange(path=str(directory), removed=removed, rewritten=True, deleted=True)
