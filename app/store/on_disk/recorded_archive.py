"""An archive directory the database records, rewritten (a value found and removed in it, a
redaction's parts, erased sessions): its sessions' rows (``sessions.archived_to``) hold its
manifest's sha256 (``archive_manifest``), so a new manifest must be recorded in the same
step as the new directory takes the old one's place.

The archive is made anew beside it and proved (``archive_dir.prepare_edit``); then, in one
transaction, ``chronicle_rewrite_archive_manifest`` changes the rows' sha256 from the old
manifest's to the new one's (only that column, only rows that still name the old manifest:
the archived head's trigger lets exactly that through) and the new directory is renamed into
place just before the commit, as ``chronicle archive`` makes its directory final
(``app.store.archive.marks``). A refusal or a failure leaves the rows and the directory as
they were; the old directory is removed only after the commit.

The anchors do not change (no event's hash did), so ``chronicle verify`` of the sessions
still passes, naming the new manifest, and ``chronicle verify --file DIR`` proves the new
directory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.on_disk.archive_dir import (
    ArchiveRewrite,
    found_in_archive,
    not_rewritten,
    prepare_rewrite,
    rewritten,
)
from app.store.on_disk.findings import Finding
from app.store.on_disk.replacing import NotRewritten

if TYPE_CHECKING:
    from app.store.event_store import EventStore

REWRITE_SQL = "SELECT chronicle_rewrite_archive_manifest($1::text, $2::bytea, $3::bytea)"


async def record_rewritten_manifest(
    store: EventStore,
    archived_to: str,
    old: bytes,
    new: bytes,
    *,
    before_commit: Callable[[], Awaitable[None]],
) -> int:
    """Record that the archive at ``archived_to`` (as the rows spell it) now has the manifest
    whose sha256 is ``new`` instead of ``old``, running ``before_commit`` last inside the
    transaction; the number of sessions' rows changed. ``NotRewritten`` when the database
    refuses (no session archived there names ``old`` any more, say): nothing changed."""
    try:
        async with store.pool.acquire() as connection, connection.transaction():
            rows = await connection.fetchval(REWRITE_SQL, archived_to, old, new)
            await before_commit()
    except asyncpg.PostgresError as exc:
        raise NotRewritten(
            f"the database did not record its new manifest, so it stays as it was: {exc}"
        ) from None
    return int(rows)


async def replace_recorded(store: EventStore, rewrite: ArchiveRewrite, archived_to: str) -> None:
    """The archive made anew (``rewrite``) in the old one's place with the database's record
    of its new manifest, or neither: ``NotRewritten`` when the database refuses (the new one
    then discarded); the old one removed after the commit."""
    aside: Path | None = None

    async def put_in_place() -> None:
        nonlocal aside
        aside = await asyncio.to_thread(rewrite.put_in_place)

    try:
        await record_rewritten_manifest(
            store,
            archived_to,
            rewrite.old_manifest,
            rewrite.new_manifest,
            before_commit=put_in_place,
        )
    except BaseException:
        if aside is not None:  # in place, but the commit failed: the old one back
            await asyncio.to_thread(rewrite.put_back, aside)
        await asyncio.to_thread(rewrite.discard)
        raise
    assert aside is not None
    await asyncio.to_thread(rewrite.remove_old, aside)


async def redact_recorded_archive(
    store: EventStore,
    directory: Path,
    archived_to: str,
    value: str,
    key: Ed25519PrivateKey | None,
) -> list[Finding]:
    """Remove ``value`` from the archive in ``directory``, which the database records as
    ``archived_to`` (see the module): a finding per file that held it."""
    found = await asyncio.to_thread(found_in_archive, directory, value)
    if not found:
        return []
    try:
        rewrite = await asyncio.to_thread(prepare_rewrite, directory, value, key, set(found))
        await replace_recorded(store, rewrite, archived_to)
    except NotRewritten as exc:
        return not_rewritten(directory, found, str(exc))
    return await asyncio.to_thread(rewritten, directory, found, value, rewrite.left)
