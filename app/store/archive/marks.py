"""Recording in the database that sessions were archived (their ``sessions`` rows, 0027).

The rows are locked (an append moves the head, so it waits), their heads compared with what
the archive holds, and marked, in one transaction; the caller's last step (the rename that
makes the archive directory final) runs inside it, before the commit. A session that grew
since it was written leaves every row as it was and the archive unnamed. Once marked, the
head cannot move: the database refuses an append to it (CR017).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from app.store.errors import StoreError

if TYPE_CHECKING:
    from app.store.event_store import EventStore

LOCK_SQL = """
SELECT id, last_seq, last_hash, archived_at FROM sessions
WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE
"""
MARK_SQL = """
UPDATE sessions SET archived_at = $2, archived_by = $3, archived_to = $4, archive_manifest = $5
WHERE id = ANY($1::uuid[])
"""
ARCHIVED_SESSIONS_SQL = "SELECT id FROM sessions WHERE archived_at IS NOT NULL"


class ArchiveRaceError(StoreError):
    """A session changed (or was archived by another run) while it was being archived."""


async def mark_archived(
    store: EventStore,
    heads: Mapping[UUID, tuple[int, bytes]],
    *,
    archived_at: datetime,
    archived_by: str,
    archived_to: str,
    manifest_sha256: bytes,
    before_commit: Callable[[], None],
) -> None:
    """Mark every session of ``heads`` (id -> last seq, head hash) archived, or none."""
    ids = sorted(heads)
    async with store.pool.acquire() as connection, connection.transaction():
        rows = await connection.fetch(LOCK_SQL, ids)
        found = {row["id"]: row for row in rows}
        for session in ids:
            row = found.get(session)
            if row is None:
                raise ArchiveRaceError(f"session {session} has no head row any more")
            if row["archived_at"] is not None:
                raise ArchiveRaceError(f"session {session} was archived meanwhile by another run")
            if (row["last_seq"], bytes(row["last_hash"])) != heads[session]:
                raise ArchiveRaceError(
                    f"session {session} grew while it was archived (seq {heads[session][0]} "
                    f"written, {row['last_seq']} now)"
                )
        await connection.execute(
            MARK_SQL, ids, archived_at, archived_by, archived_to, manifest_sha256
        )
        before_commit()


async def archived_sessions(store: EventStore) -> set[UUID]:
    """Every session this database records as archived."""
    rows = await store._retrying(lambda: store.pool.fetch(ARCHIVED_SESSIONS_SQL))
    return {row["id"] for row in rows}
