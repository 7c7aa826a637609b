"""Which sessions started when: the sessions ``chronicle export --otlp --since`` sends."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from app.store import EventStore

#: A session starts with its first event; the platform's audit log is a stream of its own and
#: is left out by the exporter, not here.
SESSIONS_SINCE_SQL = """
SELECT session_id FROM events
WHERE seq = 1 AND created_at >= $1
ORDER BY created_at, session_id
"""


async def sessions_since(store: EventStore, since: datetime) -> list[UUID]:
    """The sessions whose first event was recorded at ``since`` or later, oldest first."""
    rows = await store.pool.fetch(SESSIONS_SINCE_SQL, since)
    return [row["session_id"] for row in rows]
