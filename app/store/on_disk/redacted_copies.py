"""A redaction's parts removed from the copies Chronicle wrote to this machine's disk
(``chronicle redact SESSION --seq N``, a person's erasure; docs/erasure.md, "Exports on
disk").

Each copy that holds a session a part was redacted in:

- an export of sessions takes, in each event line concerned, the marker the database holds,
  and drops a prompt message no event of the file names any more (``part_lines``), so
  ``chronicle verify --file`` still passes;
- an archive directory is made anew the same way (its Parquet made again from its JSONL,
  ``session_state``'s cells redacted), signed again, and proved (``archive_dir``), with the
  database's record of its manifest when it has one (``recorded_archive``);
- a view's CSV or Parquet, and an ATIF trajectory, keep no chain: each cell (or string) that
  holds one of the part's strings (``redacted_parts``) becomes ``[redacted]``; in a view with
  a ``session_id`` column, only the rows of the sessions redacted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.archive.manifest import SESSION_STATE_PARQUET, SESSIONS_JSONL
from app.store.on_disk.archive_dir import ArchiveEdit
from app.store.on_disk.disk_changes import (
    DiskChange,
    DiskChanges,
    change_rows,
    each_copy,
    edit_archive,
    places,
    rewrite_file,
)
from app.store.on_disk.findings import where_in_file
from app.store.on_disk.ledger import Written
from app.store.on_disk.part_lines import (
    EventKey,
    PartsInFile,
    by_event,
    plan_parts,
    proved,
    write_parts,
)
from app.store.on_disk.redacted_parts import SHORTEST, RedactedPart, worth_looking_for
from app.store.on_disk.tables import redact_json
from app.store.on_disk.view_rows import RowChange, parquet_changes, rewrite_parquet_rows

if TYPE_CHECKING:
    from app.store.event_store import EventStore

#: What a view's or an ATIF file's report line says went.
REMOVED_TEXT = "the removed text"


async def remove_parts_on_disk(
    store: EventStore,
    parts: Sequence[RedactedPart],
    texts: Sequence[str],
    *,
    data_dir: Path,
    key: Ed25519PrivateKey | None,
) -> DiskChanges:
    """Remove ``parts`` (what the database redacted) from the copies on this machine's disk
    (see the module); ``texts``: the strings they held, read before the redaction; ``key``
    signs a rewritten archive's manifest (the anchor key)."""
    if not parts:
        return DiskChanges()
    grouped = by_event(parts)
    sessions = {part.session_id for part in parts}
    looked_for, short = worth_looking_for(list(texts))
    rows = RowChange.scrubbing(sessions, looked_for)

    async def handle(path: Path, entry: Written, archived_to: str | None) -> DiskChange | None:
        if entry.kind == "sessions":
            return await asyncio.to_thread(_in_export, path, grouped)
        if entry.kind == "archive":
            return await _in_archive(store, path, archived_to, grouped, rows, key)
        if not looked_for:
            return None
        if entry.kind == "atif":
            return await asyncio.to_thread(_in_document, path, looked_for)
        return await asyncio.to_thread(change_rows, path, entry.kind, rows, REMOVED_TEXT)

    report = await each_copy(store, data_dir, sessions, handle)
    if short:
        report.notes.append(
            f"{short} strings of what was removed are shorter than {SHORTEST} characters: not "
            "looked for in views and ATIF files (they would match where they are not what "
            "was removed)"
        )
    return report


def _removed(plan: PartsInFile) -> list[str]:
    return plan.done + [f"prompt message {key[:12]}..." for key in plan.dropped]


def _in_export(path: Path, grouped: dict[EventKey, list[RedactedPart]]) -> DiskChange | None:
    plan = plan_parts(path, grouped)
    if not plan.changes:
        if not plan.left:
            return None
        return DiskChange(path=str(path), removed=[], rewritten=False, left=plan.left)

    def write(draft: Path) -> None:
        proved(path, "it does not verify as a Chronicle export")
        write_parts(path, draft, plan)

    change = rewrite_file(path, _removed(plan), write)
    change.left += plan.left
    return change


def _in_document(path: Path, texts: list[str]) -> DiskChange | None:
    """An ATIF trajectory (a JSON document) without the strings that held ``texts``."""
    where = where_in_file(path, texts)
    if not where:
        return None
    change = rewrite_file(
        path,
        [f"{REMOVED_TEXT} at {places(where)}"],
        lambda draft: redact_json(path, draft, texts),
    )
    still = where_in_file(path, texts) if change.rewritten else []
    if still:
        change.left.append(f"still holds it at {places(still)}")
    return change


async def _in_archive(
    store: EventStore,
    directory: Path,
    archived_to: str | None,
    grouped: dict[EventKey, list[RedactedPart]],
    rows: RowChange,
    key: Ed25519PrivateKey | None,
) -> DiskChange | None:
    def plan() -> tuple[PartsInFile, list[str]]:
        state = directory / SESSION_STATE_PARQUET
        cells = parquet_changes(state, rows) if rows.texts and state.is_file() else []
        return plan_parts(directory / SESSIONS_JSONL, grouped), cells

    lines, cells = await asyncio.to_thread(plan)
    if not lines.changes and not cells:
        if not lines.left:
            return None
        return DiskChange(path=str(directory), removed=[], rewritten=False, left=lines.left)

    def jsonl(source: Path, target: Path) -> list[str]:
        write_parts(source, target, lines)
        return list(lines.left)

    edit = ArchiveEdit(
        jsonl=jsonl if lines.changes else None,
        state=(lambda source, target: rewrite_parquet_rows(source, target, rows))
        if cells
        else None,
    )
    removed = _removed(lines) + (
        [f"{REMOVED_TEXT} at {SESSION_STATE_PARQUET} {places(cells)}"] if cells else []
    )
    change = await edit_archive(store, directory, archived_to, edit, key, removed)
    if not change.rewritten:
        change.left += lines.left
    return change
