"""Which sessions belong to an evaluation run, from ``session_state`` (its ``evaluation_run``
column, filled from each session's ``session.created``), and the events of many sessions in
one query (re-scoring a thousand sessions must not cost a thousand reads)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from app.store.event_store import COLUMNS, EventStore
from app.store.records import RecordedEvent

# A replay or a fork copies its recording's config, evaluation_run included: it is not one of
# the run's own sessions (a replay run is tagged by its `replay` scores, see app/evaluation).
RUN_SESSIONS_SQL = (
    "SELECT session_id FROM session_state WHERE evaluation_run = $1 "
    "AND replay_of IS NULL AND forked_from IS NULL ORDER BY created_at, session_id"
)
READ_SESSIONS_SQL = (
    f"SELECT {COLUMNS} FROM events WHERE session_id = ANY($1::uuid[]) ORDER BY session_id, seq"
)


async def evaluation_run_sessions(store: EventStore, run: str) -> list[UUID]:
    """The run's sessions, oldest first (empty: no session was run under that name)."""
    rows = await store.pool.fetch(RUN_SESSIONS_SQL, run)
    return [row["session_id"] for row in rows]


async def read_sessions(
    store: EventStore, session_ids: Sequence[UUID]
) -> dict[UUID, list[RecordedEvent]]:
    """Each session's events in seq order, whole (as ``EventStore.read`` gives them), read in
    one query; a session without events is left out."""
    events = await store._retrying(lambda: store._fetch(READ_SESSIONS_SQL, list(session_ids)))
    found: dict[UUID, list[RecordedEvent]] = {}
    for event in events:
        found.setdefault(event.session_id, []).append(event)
    return found
