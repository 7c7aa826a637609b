"""A line per session for people: what it was, how it ended, what it cost (plain SQL)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel

from app.store import EventStore

SUMMARY_SQL = """
SELECT s.id, s.created_at, s.last_seq,
       first.payload->>'title' AS title,
       (SELECT e.payload->>'state' FROM events e
         WHERE e.session_id = s.id AND e.kind = 'agent.state' AND e.source = 'agent'
         ORDER BY e.seq DESC LIMIT 1) AS state,
       calls.count AS model_calls,
       calls.cost AS cost_usd
FROM sessions s
LEFT JOIN events first
       ON first.session_id = s.id AND first.seq = 1 AND first.kind = 'session.created'
CROSS JOIN LATERAL (
    SELECT count(*) AS count, coalesce(sum((e.payload->>'cost_usd')::float8), 0) AS cost
    FROM events e WHERE e.session_id = s.id AND e.kind = 'llm.call'
) AS calls
ORDER BY s.created_at DESC
LIMIT $1
"""


class SessionSummary(BaseModel):
    id: UUID
    created_at: datetime
    events: int
    title: str | None
    state: str | None
    model_calls: int
    cost_usd: float


async def recent_sessions(store: EventStore, limit: int = 20) -> list[SessionSummary]:
    rows = await store.pool.fetch(SUMMARY_SQL, limit)
    return [
        SessionSummary(
            id=row["id"],
            created_at=row["created_at"],
            events=row["last_seq"],
            title=row["title"],
            state=row["state"],
            model_calls=row["model_calls"],
            cost_usd=row["cost_usd"],
        )
        for row in rows
    ]
