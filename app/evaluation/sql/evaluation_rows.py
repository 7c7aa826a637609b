"""Which sessions belong to an evaluation run, from ``session_state`` (its ``evaluation_run``
column, filled from each session's ``session.created``), and the events of many sessions in
one query (re-scoring a thousand sessions must not cost a thousand reads)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from decimal import Decimal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.evaluation.sql.trial_stops import configuration_stop_sql
from app.events.session_config import json_path
from app.store import EVENT_COLUMNS, EventStore, RecordedEvent, claimed_sql

# A replay or a fork copies its recording's config, evaluation_run included: it is not one of
# the run's own sessions. A replay run (`chronicle eval replay --name`) is made of replay
# sessions tagged by their newest `replay` score (app/evaluation/replaying.py), as the
# `evaluation_sessions` view finds them: `eval score REPLAY_RUN` scores those.
RUN_SESSIONS_SQL = """
SELECT session_id FROM (
    SELECT s.session_id, s.created_at
    FROM session_state s
    WHERE s.evaluation_run = $1 AND s.replay_of IS NULL AND s.forked_from IS NULL
    UNION
    SELECT s.session_id, s.created_at
    FROM session_state s
    CROSS JOIN LATERAL (
        SELECT e.payload->>'evaluation_run' AS evaluation_run
        FROM events e
        WHERE e.session_id = s.session_id AND e.kind = 'eval.score'
          AND e.payload->>'name' = 'replay' AND e.payload->>'evaluation_run' IS NOT NULL
        ORDER BY e.seq DESC
        LIMIT 1
    ) tag
    WHERE s.replay_of IS NOT NULL AND tag.evaluation_run = $1
) members
ORDER BY created_at, session_id
"""
READ_SESSIONS_SQL = (
    f"SELECT {EVENT_COLUMNS} FROM events "
    "WHERE session_id = ANY($1::uuid[]) ORDER BY session_id, seq"
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


# Every session a run started (superseded attempts too), for `chronicle eval run --resume`.
RUN_ATTEMPTS_SQL = f"""
SELECT s.session_id, s.status, s.state_reason, {claimed_sql("s.session_id")} AS claimed,
       {json_path("evaluation", "task", "id")} AS task_id,
       coalesce(({json_path("evaluation", "epoch")})::integer, 1) AS epoch,
       coalesce(({json_path("evaluation", "attempt")})::integer, 1) AS attempt,
       coalesce(({json_path("evaluation", "resume")})::integer, 0) AS resume,
       ({json_path("evaluation", "plan", text=False)})::text AS plan,
       {json_path("workspace")} AS workspace,
       EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.session_id
                                        AND e.kind = 'eval.score') AS scored,
       {configuration_stop_sql("s.session_id", "$2")} AS stopped_by
FROM session_state s
JOIN events c ON c.session_id = s.session_id AND c.seq = 1
WHERE s.evaluation_run = $1 AND s.replay_of IS NULL AND s.forked_from IS NULL
ORDER BY s.created_at, s.session_id
"""


class RunAttempt(BaseModel):
    """A session an evaluation run started for one task x epoch."""

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    task_id: str | None
    epoch: int
    attempt: int
    resume: int
    status: str | None
    state_reason: str | None
    #: a process runs it now
    claimed: bool
    #: it has an eval.score: its run scored it
    scored: bool
    workspace: str | None
    #: how the run was started (``evaluation_plan``), as JSON text
    plan: str | None
    #: the configuration error it ended on, which stopped its run (``trial_stops``)
    stopped_by: str | None = None


async def run_attempts(
    store: EventStore, run: str, stop_kinds: Collection[str] = ()
) -> list[RunAttempt]:
    """Every session the run started, oldest first; the caller brings ``session_state`` up
    to date first. ``stop_kinds``: the model failures that stop a run (``stopped_by``)."""
    rows = await store.pool.fetch(RUN_ATTEMPTS_SQL, run, list(stop_kinds))
    return [RunAttempt.model_validate(dict(row)) for row in rows]


class FinishedTrial(BaseModel):
    """A trial as the report views count it (its newest attempt)."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    epoch: int
    session_id: UUID
    status: str | None
    passed: bool
    cost_usd: Decimal | None


async def counted_trials(store: EventStore, run: str) -> list[FinishedTrial]:
    """Each trial of the run from ``evaluation_sessions`` (``session_state`` brought up to
    date by the caller)."""
    rows = await store.pool.fetch(
        "SELECT task_id, epoch, session_id, status, passed, cost_usd FROM evaluation_sessions "
        "WHERE evaluation_run = $1",
        run,
    )
    return [FinishedTrial.model_validate(dict(row)) for row in rows]
