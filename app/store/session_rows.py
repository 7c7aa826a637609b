"""The latest sessions as rows of facts, for the session list (plain SQL over the log).

The last agent state is the controller's (source ``agent``); ``claimed`` says whether a process
is running the session now (see ``session_claims``); cost is split into what is known and how
many answered calls have no price, so nobody reads an unknown cost as zero (a failed call
costs nothing).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import BaseModel

from app.store.session_claims import claimed_sql

if TYPE_CHECKING:
    from app.store.event_store import EventStore

LATEST_SQL = f"""
SELECT s.id, s.created_at, s.last_seq,
       first.payload->>'title' AS title,
       (SELECT e.payload->>'state' FROM events e
         WHERE e.session_id = s.id AND e.kind = 'agent.state' AND e.source = 'agent'
         ORDER BY e.seq DESC LIMIT 1) AS state,
       {claimed_sql("s.id")} AS claimed,
       calls.count AS model_calls,
       calls.known_cost AS known_cost_usd,
       calls.unpriced AS unpriced_calls
FROM sessions s
LEFT JOIN events first
       ON first.session_id = s.id AND first.seq = 1 AND first.kind = 'session.created'
CROSS JOIN LATERAL (
    SELECT count(*) AS count,
           coalesce(sum((e.payload->>'cost_usd')::float8), 0) AS known_cost,
           count(*) FILTER (WHERE e.payload->>'cost_usd' IS NULL
                              AND e.payload->>'error' IS NULL) AS unpriced
    FROM events e WHERE e.session_id = s.id AND e.kind = 'llm.call'
) AS calls
ORDER BY s.created_at DESC
LIMIT $1
"""


class SessionRow(BaseModel):
    id: UUID
    created_at: datetime
    last_seq: int
    title: str | None
    #: The controller's last ``agent.state``, as recorded.
    state: str | None
    #: A process holds the session's claim: it is running it now.
    claimed: bool
    model_calls: int
    known_cost_usd: float
    unpriced_calls: int


async def latest_sessions(store: EventStore, limit: int) -> list[SessionRow]:
    rows = await store.pool.fetch(LATEST_SQL, limit)
    return [SessionRow(**dict(row)) for row in rows]
