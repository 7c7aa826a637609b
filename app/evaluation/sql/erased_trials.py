"""The trials of a run whose sessions were erased (``session_tombstones``, migration 0030): their
events went, so the report views, which read each trial's ``session.created``, no longer see
them; ``session_state`` still names their run."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.store import EventStore

#: A replay or a fork copies its recording's run: it is not one of the run's own trials.
ERASED_TRIALS_SQL = """
SELECT t.session_id, t.erased_at, t.erased_by, t.policy
FROM session_state s
JOIN session_tombstones t ON t.session_id = s.session_id
WHERE s.evaluation_run = $1 AND s.replay_of IS NULL AND s.forked_from IS NULL
ORDER BY s.created_at, s.session_id
"""
TOMBSTONE_SQL = """
SELECT session_id, erased_at, erased_by, policy FROM session_tombstones WHERE session_id = $1
"""


class ErasedSession(BaseModel):
    """An erased session: when, by whom, under which policy."""

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    erased_at: datetime
    erased_by: str
    policy: str

    def describe(self) -> str:
        when = self.erased_at.astimezone(UTC)
        return (
            f"erased {when:%Y-%m-%d %H:%M} UTC by {self.erased_by} under the policy {self.policy!r}"
        )


async def erased_trials(store: EventStore, run: str) -> list[ErasedSession]:
    """The run's trials whose sessions were erased, oldest first. The caller brings
    ``session_state`` up to date first."""
    rows = await store.pool.fetch(ERASED_TRIALS_SQL, run)
    return [ErasedSession.model_validate(dict(row)) for row in rows]


async def tombstone_of(store: EventStore, session_id: UUID) -> ErasedSession | None:
    """The session's tombstone (None: it was not erased)."""
    row = await store.pool.fetchrow(TOMBSTONE_SQL, session_id)
    return None if row is None else ErasedSession.model_validate(dict(row))
