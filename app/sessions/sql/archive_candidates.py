"""Which sessions ended before a moment: what ``chronicle archive --before DATE`` writes.

A session **ended before DATE** when all of these hold, read from the log and the leases at
the moment of the query (not from the ``session_state`` projection, which may lag):

- its phase (``app.agent.steering.phase_of``, the one the API refuses steering by) is an
  ending: ``finished``, ``awaiting_user_input``, ``stopped`` (by the user), ``error`` or
  ``limit``; or its log holds a ``session.closed``. A session that is running, interrupted
  (its agent was cut short and may be resumed), pausing, paused or stopping is not;
- nothing runs it and nothing is asked to (no claim, no lease row);
- its last event, whatever its kind (a message, an annotation), was recorded before DATE;
- it is not archived already, and it is not the platform's audit log (a stream, not a
  session, that every audit record extends).

A session whose agent Chronicle does not run and that never records an ending (a gateway
recording of an external agent) is therefore never archived by date alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import BaseModel

from app.agent.steering import Phase, StateMark, SteeringMarks, phase_of
from app.events.platform_audit import PLATFORM_LOG_ID
from app.store import Record, claimed_sql

if TYPE_CHECKING:
    from app.store import EventStore

#: The phases in which a session has ended (see the module).
ENDED_PHASES: frozenset[Phase] = frozenset(
    {"finished", "awaiting_user_input", "stopped", "error", "limit"}
)

CANDIDATES_SQL = f"""
SELECT s.id, s.last_seq, last.created_at AS last_event_at,
    agent.seq AS state_seq, agent.payload ->> 'state' AS state,
    agent.payload ->> 'reason' AS reason, agent.payload ->> 'limit' AS limit_reached,
    asked.seq AS request_seq, asked.payload ->> 'state' AS request,
    (SELECT m.seq FROM events m
     WHERE m.session_id = s.id AND m.kind = 'message' AND m.source = 'user'
     ORDER BY m.seq DESC LIMIT 1) AS message_seq,
    (EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = s.id)
     OR {claimed_sql("s.id")}) AS running,
    EXISTS (SELECT 1 FROM events c WHERE c.session_id = s.id AND c.kind = 'session.closed')
        AS closed
FROM sessions s
JOIN LATERAL (
    SELECT e.created_at FROM events e WHERE e.session_id = s.id AND e.seq = s.last_seq
) AS last ON true
LEFT JOIN LATERAL (
    SELECT e.seq, e.payload FROM events e
    WHERE e.session_id = s.id AND e.kind = 'agent.state' AND e.source = 'agent'
    ORDER BY e.seq DESC LIMIT 1
) AS agent ON true
LEFT JOIN LATERAL (
    SELECT e.seq, e.payload FROM events e
    WHERE e.session_id = s.id AND e.kind = 'agent.state' AND e.source = 'user'
    ORDER BY e.seq DESC LIMIT 1
) AS asked ON true
WHERE s.archived_at IS NULL AND s.id <> $2::uuid AND s.last_seq > 0
  AND last.created_at < $1
ORDER BY s.created_at, s.id
"""


class Candidate(BaseModel):
    """A session whose last event is before DATE, with the phase it is in."""

    session_id: UUID
    last_seq: int
    last_event_at: datetime
    phase: Phase
    closed: bool
    #: A process holds its claim, or a worker was asked to run it (a lease row).
    running: bool = False

    @property
    def ended(self) -> bool:
        if self.running:
            return False
        return self.phase in ENDED_PHASES or (self.closed and self.phase != "running")


def _marks(row: Record) -> SteeringMarks:
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
        last_seq=row["last_seq"],
        state=state,
        request=request,
        message_seq=row["message_seq"],
        running=bool(row["running"]),
    )


async def quiet_sessions(store: EventStore, before: datetime) -> list[Candidate]:
    """Every session not archived whose last event is before ``before``, with its phase
    (``Candidate.ended`` says whether it ended), oldest first."""
    rows = await store._retrying(lambda: store.pool.fetch(CANDIDATES_SQL, before, PLATFORM_LOG_ID))
    return [
        Candidate(
            session_id=row["id"],
            last_seq=row["last_seq"],
            last_event_at=row["last_event_at"],
            phase=phase_of(_marks(row)),
            closed=bool(row["closed"]),
            running=bool(row["running"]),
        )
        for row in rows
    ]
