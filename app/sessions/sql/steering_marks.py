"""What a session's steering is decided from, read in one query: the agent's last state, the
user's last steering and last message, and whether anything runs (or will run) the session.

The log alone says what the agent did and what the user asked; whether a process runs the
session now (its claim) or a worker was asked to (its lease row) is not in the log, and tells
a session whose agent was cut short and nobody continues from one that goes on. The rules
that read these marks, and the marks' model, are pure (``app.agent.steering``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from app.agent.steering import StateMark, SteeringMarks
from app.store import claimed_sql, session_months

if TYPE_CHECKING:
    from app.store import EventStore


MARKS_SQL = f"""
SELECT
    (SELECT last_seq FROM sessions WHERE id = $1) AS last_seq,
    agent.seq AS state_seq, agent.payload ->> 'state' AS state,
    agent.payload ->> 'reason' AS reason, agent.payload ->> 'limit' AS limit_reached,
    asked.seq AS request_seq, asked.payload ->> 'state' AS request,
    (SELECT m.seq FROM events m
     WHERE m.session_id = $1 AND m.kind = 'message' AND m.source = 'user'
       AND {session_months("$1", "m")}
     ORDER BY m.seq DESC LIMIT 1) AS message_seq,
    (EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = $1)
     OR {claimed_sql("$1::uuid")}) AS running
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    SELECT e.seq, e.payload FROM events e
    WHERE e.session_id = $1 AND e.kind = 'agent.state' AND e.source = 'agent'
      AND {session_months("$1", "e")}
    ORDER BY e.seq DESC LIMIT 1
) AS agent ON true
LEFT JOIN LATERAL (
    SELECT e.seq, e.payload FROM events e
    WHERE e.session_id = $1 AND e.kind = 'agent.state' AND e.source = 'user'
      AND {session_months("$1", "e")}
    ORDER BY e.seq DESC LIMIT 1
) AS asked ON true
"""


async def steering_marks(store: EventStore, session_id: UUID) -> SteeringMarks:
    """The session's marks as the log and the leases say now."""
    row = await store.pool.fetchrow(MARKS_SQL, session_id)
    assert row is not None  # one row, always
    state = request = None
    if row["state"] is not None:
        state = StateMark(
            seq=row["state_seq"],
            state=row["state"],
            reason=row["reason"] or "",
            limit=row["limit_reached"],
        )
    if row["request"] is not None:
        request = StateMark(seq=row["request_seq"], state=row["request"])
    return SteeringMarks(
        last_seq=row["last_seq"] or 0,
        state=state,
        request=request,
        message_seq=row["message_seq"],
        running=bool(row["running"]),
    )
