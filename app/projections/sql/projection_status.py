"""How far each projection is: ``chronicle projections status``.

Lag is counted two ways: events committed after the projection's position (all sessions),
and the seconds the oldest of them has waited. A runner is live while it holds the
projection's advisory lock (pg_locks lists it), whatever the ``runner`` column last said.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from app.projections.sql.projection_store import CHECKPOINT_SQL, LOCK_CLASS, checkpoint_from_row
from app.store import Position

if TYPE_CHECKING:
    from app.store import EventStore


class ProjectionStatus(BaseModel):
    """How far a projection is: its checkpoint, what is behind it, whether a runner is live."""

    name: str
    #: The version of the code that built its tables (None: never run).
    version: int | None
    position: Position | None
    #: Events recorded after its position (committed, all sessions).
    behind: int
    #: Seconds the oldest of them has waited (0 when none is behind).
    lag_seconds: float
    #: A runner holds its lock now.
    live: bool
    runner: str | None
    updated_at: datetime | None
    rebuilt_at: datetime | None


BEHIND_SQL = """
SELECT count(*) AS behind, min(created_at) AS oldest, now() AS now FROM events
WHERE (tx, global_position) > ($1::xid8, $2::bigint)
"""
LIVE_SQL = f"""
SELECT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = {LOCK_CLASS} AND l.objid = hashtext($1::text)::oid
)
"""


async def projection_status(store: EventStore, names: Sequence[str]) -> list[ProjectionStatus]:
    """Each projection's checkpoint, what is behind it and whether a runner holds its lock."""
    found = []
    async with store.pool.acquire() as connection:
        for name in names:
            row = await connection.fetchrow(CHECKPOINT_SQL, name)
            checkpoint = checkpoint_from_row(row) if row is not None else None
            position = checkpoint.position if checkpoint else Position.origin()
            behind = await connection.fetchrow(BEHIND_SQL, *position)
            oldest = behind["oldest"]
            found.append(
                ProjectionStatus(
                    name=name,
                    version=checkpoint.version if checkpoint else None,
                    position=checkpoint.position if checkpoint else None,
                    behind=behind["behind"],
                    lag_seconds=(behind["now"] - oldest).total_seconds() if oldest else 0.0,
                    live=await connection.fetchval(LIVE_SQL, name),
                    runner=checkpoint.runner if checkpoint else None,
                    updated_at=checkpoint.updated_at if checkpoint else None,
                    rebuilt_at=checkpoint.rebuilt_at if checkpoint else None,
                )
            )
    return found
