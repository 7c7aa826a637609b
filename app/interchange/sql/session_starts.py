"""Which sessions started when: the sessions ``chronicle export --otlp --since`` sends."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from app.store import EventStore

#: The store's row of each session (``sessions``) has the time of its first event: an append
#: and an import write it with that event (chronicle_append, chronicle_import). One row per
#: session, not a scan of the events. The platform's audit log is a stream of its own and is
#: left out by the exporter, not here.
SESSIONS_SINCE_SQL = """
SELECT id FROM sessions
WHERE created_at >= $1
ORDER BY created_at, id
"""


async def sessions_since(store: EventStore, since: datetime) -> list[UUID]:
    """The sessions whose first event was recorded at ``since`` or later, oldest first."""
    rows = await store.pool.fetch(SESSIONS_SINCE_SQL, since)
    return [row["id"] for row in rows]
