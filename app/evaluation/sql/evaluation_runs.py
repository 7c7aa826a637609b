"""Evaluation runs started through the API: their trials as the log holds them, the run list
(``GET /api/evaluations``) and the claim of a trial.

A run is no row of its own: it is its sessions (``session.created`` config ``evaluation_run``).
Each trial's session id is derived from the run, task and epoch, and claimed by inserting its
owner row: whoever inserts it first records the trial, so two requests of one name, or two
workers starting a run's next trial at once, start it once.
An API run's sessions each have an owner (``session_owners``, written before the session's
first event), so its trials are read from the owner's sessions and the log itself, never
from a projection that may lag; the list reads the report views (``evaluation_sessions``) and
so includes runs started by ``chronicle eval run``, which have no owner.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple
from uuid import UUID

import orjson
from pydantic import BaseModel, ConfigDict, field_validator

from app.evaluation.sql.trial_stops import configuration_stop_sql
from app.events.session_config import json_path
from app.sessions.sql.session_owners import ACTIVE_SQL, RESERVE_LOCK_CLASS
from app.store import EventStore

#: What claiming a trial did (see ``claim_trial``).
TrialClaim = Literal["claimed", "taken", "capped"]
#: The ``session.created`` config values these queries read (``app.events.session_config``).
_RUN = json_path("evaluation", "run")
_TASK_ID = json_path("evaluation", "task", "id")
_EPOCH = json_path("evaluation", "epoch")
_REQUEST = json_path("evaluation", "request", text=False)
_REQUEST_NAME = json_path("evaluation", "request", "name")
_MODEL = json_path("model")

OWNED_TRIALS_SQL = f"""
SELECT o.session_id,
       {_TASK_ID} AS task_id,
       coalesce(({_EPOCH})::integer, 1) AS epoch,
       EXISTS (SELECT 1 FROM events e WHERE e.session_id = o.session_id
                                        AND e.kind = 'eval.score') AS scored,
       {configuration_stop_sql("o.session_id", "$3")} AS stopped_by
FROM session_owners o
JOIN events c ON c.session_id = o.session_id AND c.seq = 1
WHERE o.user_id = $1 AND {_RUN} = $2
ORDER BY c.created_at, o.session_id
"""
#: A session of the owner's recorded under one of the names (an API run's name is its
#: owner's: ``app.evaluation.api_runs.run_key``).
NAME_TAKEN_SQL = f"""
SELECT EXISTS (
    SELECT 1 FROM session_owners o
    JOIN events c ON c.session_id = o.session_id AND c.seq = 1
    WHERE o.user_id = $1 AND {_RUN} = ANY($2::text[])
)
"""
#: The recorded names (``evaluation_run``) of the API runs their owners named ``$1``.
KEYS_NAMED_SQL = f"""
SELECT DISTINCT {_RUN} AS key
FROM session_owners o
JOIN events c ON c.session_id = o.session_id AND c.seq = 1
WHERE {_REQUEST_NAME} = $1
ORDER BY 1
"""
RUNS_SQL = f"""
WITH runs AS (
    SELECT es.evaluation_run AS name,
           min(es.created_at) AS created_at,
           count(*) AS started,
           count(*) FILTER (WHERE es.status IS NOT NULL) AS begun,
           count(*) FILTER (WHERE es.verdicts <> '{{}}'::jsonb) AS scored,
           count(*) FILTER (WHERE es.verdicts <> '{{}}'::jsonb AND es.passed) AS passed,
           (array_agg(o.user_id ORDER BY es.created_at, es.session_id))[1] AS owner,
           (array_agg({_REQUEST}
                      ORDER BY es.created_at, es.session_id))[1] AS request,
           (array_agg({_MODEL}
                      ORDER BY es.created_at, es.session_id))[1] AS model,
           (array_agg(stop.reason ORDER BY es.created_at, es.session_id)
                FILTER (WHERE stop.reason IS NOT NULL))[1] AS stopped_by
    FROM evaluation_sessions es
    CROSS JOIN LATERAL (
        SELECT CASE WHEN es.status = 'error'
                    THEN {configuration_stop_sql("es.session_id", "$6")} END AS reason
    ) stop
    JOIN events c ON c.session_id = es.session_id AND c.seq = 1
    LEFT JOIN session_owners o ON o.session_id = es.session_id
    GROUP BY es.evaluation_run
)
SELECT r.name, r.created_at, r.started, r.begun, r.scored, r.passed, r.owner, r.request,
       r.model, r.stopped_by, u.name AS user_name
FROM runs r
LEFT JOIN users u ON u.id = r.owner
WHERE ($1::uuid IS NULL OR r.owner = $1)
  AND ($2::text IS NULL OR r.name = $2)
  AND ($3::timestamptz IS NULL OR (r.created_at, r.name) < ($3, $4::text))
ORDER BY r.created_at DESC, r.name DESC
LIMIT $5
"""


#: The owner and request of an API run, from its first session (None: no API run is named so).
RUN_OWNER_SQL = f"""
SELECT o.user_id AS owner, {_REQUEST} AS request,
       count(*) OVER () AS started
FROM session_owners o
JOIN events c ON c.session_id = o.session_id AND c.seq = 1
WHERE {_RUN} = $1
ORDER BY c.created_at, o.session_id
LIMIT 1
"""


class RunOwner(BaseModel):
    """Who started an API run, with what request, and how many of its trials are recorded."""

    model_config = ConfigDict(frozen=True)

    owner: UUID
    request: dict[str, Any] | None
    started: int

    @field_validator("request", mode="before")
    @classmethod
    def _decoded(cls, value: Any) -> Any:
        return orjson.loads(value) if isinstance(value, str | bytes) else value


class OwnedTrial(BaseModel):
    """A trial session of an API run: which task x epoch, and whether it was scored."""

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    task_id: str | None
    epoch: int
    scored: bool
    #: the configuration error it ended on, which stopped its run (``trial_stops``)
    stopped_by: str | None = None


class RunRow(BaseModel):
    """One evaluation run as the list shows it (counts from the report views)."""

    model_config = ConfigDict(frozen=True)

    name: str
    created_at: datetime
    #: sessions recorded so far (an API run records the next trials as earlier ones end)
    started: int
    #: sessions whose agent has started
    begun: int
    scored: int
    passed: int
    owner: UUID | None
    user_name: str | None
    model: str | None
    #: what an API run was started with (None: started by ``chronicle eval run``)
    request: dict[str, Any] | None
    #: the configuration error that stopped the run (its first trial that ended on one)
    stopped_by: str | None = None

    @field_validator("request", mode="before")
    @classmethod
    def _decoded(cls, value: Any) -> Any:
        return orjson.loads(value) if isinstance(value, str | bytes) else value


async def claim_trial(
    store: EventStore, session_id: UUID, owner: UUID, cap: int | None
) -> TrialClaim:
    """Make ``owner`` the owner of the trial session ``session_id`` (an id derived from the
    run, task and epoch): ``taken`` when someone recorded that trial first (so each trial is
    started once, and a run's name once, without a lock held across the recording);
    ``capped`` when ``cap`` is given and the owner has that many sessions active (checked
    as ``reserve_session`` checks it, under the same per-user lock)."""
    async with store.pool.acquire() as connection, connection.transaction():
        if cap is not None:
            await connection.execute(
                "SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))",
                RESERVE_LOCK_CLASS,
                str(owner),
            )
            if await connection.fetchval(ACTIVE_SQL, owner) >= cap:
                return "capped"
        claimed = await connection.fetchval(
            "INSERT INTO session_owners (session_id, user_id) VALUES ($1, $2) "
            "ON CONFLICT (session_id) DO NOTHING RETURNING session_id",
            session_id,
            owner,
        )
        return "claimed" if claimed is not None else "taken"


class ClaimHolder(NamedTuple):
    """Who claimed a trial session (``claim_trial``), and how long ago by the database's
    clock."""

    owner: UUID
    age: timedelta


async def trial_claim(store: EventStore, session_id: UUID) -> ClaimHolder | None:
    """The claim on the trial session ``session_id``; None when nobody claimed it."""
    row = await store.pool.fetchrow(
        "SELECT user_id, now() - created_at AS age FROM session_owners WHERE session_id = $1",
        session_id,
    )
    return None if row is None else ClaimHolder(row["user_id"], row["age"])


async def database_now(store: EventStore) -> datetime:
    """The database's clock, which stamps every event's ``created_at``: compare those with it,
    not with this process's clock."""
    now: datetime = await store.pool.fetchval("SELECT now()")
    return now


async def name_taken(store: EventStore, owner: UUID, names: list[str]) -> bool:
    """Whether ``owner`` has a run recorded under one of ``names`` (other users' runs of the
    same name do not count: the name is the owner's)."""
    taken: bool = await store.pool.fetchval(NAME_TAKEN_SQL, owner, names)
    return taken


async def run_recorded(store: EventStore, key: str) -> bool:
    """Whether sessions are recorded as run ``key`` (a command-line run has no owner: the
    projection's view of it)."""
    found: bool = await store.pool.fetchval(
        "SELECT EXISTS (SELECT 1 FROM session_state WHERE evaluation_run = $1)", key
    )
    return found


async def keys_named(store: EventStore, name: str) -> list[str]:
    """What the API runs named ``name`` (by any owner) are recorded as, for an admin who
    asks for a run by its name."""
    rows = await store.pool.fetch(KEYS_NAMED_SQL, name)
    return [row["key"] for row in rows]


async def owned_trials(
    store: EventStore, owner: UUID, name: str, stop_kinds: Collection[str] = ()
) -> list[OwnedTrial]:
    """The trials of the owner's run ``name`` recorded so far, oldest first
    (``stop_kinds``: the model failures that stop a run, for ``stopped_by``)."""
    rows = await store.pool.fetch(OWNED_TRIALS_SQL, owner, name, list(stop_kinds))
    return [OwnedTrial.model_validate(dict(row)) for row in rows]


async def list_runs(
    store: EventStore,
    *,
    owner: UUID | None,
    limit: int,
    name: str | None = None,
    after: tuple[datetime, str] | None = None,
    stop_kinds: Collection[str] = (),
) -> list[RunRow]:
    """Runs newest first (``owner``: only that user's; None: every run, ownerless ones
    too), after the keyset ``after`` = the last row's ``(created_at, name)``; ``session_state``
    brought up to date by the caller. ``stop_kinds``: the model failures that stop a run."""
    rows = await store.pool.fetch(
        RUNS_SQL, owner, name, after[0] if after else None, after[1] if after else None, limit,
        list(stop_kinds),
    )  # fmt: skip
    return [RunRow.model_validate(dict(row)) for row in rows]


async def run_owner(store: EventStore, name: str) -> RunOwner | None:
    """The owner of the run recorded as ``name`` if it was started through the API (read from
    the log, so a run is found as soon as it is started); None for a CLI run or none at all."""
    row = await store.pool.fetchrow(RUN_OWNER_SQL, name)
    return None if row is None else RunOwner.model_validate(dict(row))
