"""Which sessions belong to an evaluation run, from ``session_state`` (its ``evaluation_run``
column, filled from each session's ``session.created``)."""

from __future__ import annotations

from uuid import UUID

from app.store.event_store import EventStore

RUN_SESSIONS_SQL = (
    "SELECT session_id FROM session_state WHERE evaluation_run = $1 ORDER BY created_at, session_id"
)


async def evaluation_run_sessions(store: EventStore, run: str) -> list[UUID]:
    """The run's sessions, oldest first (empty: no session was run under that name)."""
    rows = await store.pool.fetch(RUN_SESSIONS_SQL, run)
    return [row["session_id"] for row in rows]
