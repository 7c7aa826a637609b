"""API evaluation runs a worker may have left half done, for the workers' sweep
(``app.evaluation.run_recovery``): a run with an unscored trial that no lease holds (its run
ended and nobody scored it, or it was never queued, or its user paused it), or with fewer
unscored trials than its concurrency and fewer recorded than its total (its next trials were
not recorded). Candidates only: the sweep decides from the log what each needs.

Read from ``session_state``'s ``evaluation_run`` so that only evaluation sessions are looked
at; a trial the projection has not seen yet is found by a later sweep.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any
from uuid import UUID

import orjson
from pydantic import BaseModel, ConfigDict, field_validator

from app.evaluation.sql.trial_stops import configuration_stop_sql
from app.events.session_config import json_has, json_path
from app.store import EventStore

STRANDED_RUNS_SQL = f"""
WITH trials AS (
    SELECT o.user_id AS owner, s.evaluation_run AS name, s.session_id,
           {json_path("evaluation", "request", text=False)} AS request,
           EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.session_id
                                            AND e.kind = 'eval.score') AS scored,
           EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = s.session_id) AS leased,
           s.status = 'error'
               AND {configuration_stop_sql("s.session_id", "$1")} IS NOT NULL AS stopped
    FROM session_state s
    JOIN session_owners o ON o.session_id = s.session_id
    JOIN events c ON c.session_id = s.session_id AND c.seq = 1
    WHERE s.evaluation_run IS NOT NULL AND {json_has("evaluation", "request")}
)
SELECT owner, name, (array_agg(request))[1] AS request,
       coalesce(array_agg(session_id ORDER BY session_id)
                    FILTER (WHERE NOT scored AND NOT leased), '{{}}') AS idle
FROM trials
GROUP BY owner, name
HAVING NOT bool_or(coalesce(stopped, false)) AND (
    bool_or(NOT scored AND NOT leased)
    OR (count(*) FILTER (WHERE NOT scored) < max((request->>'concurrency')::integer)
        AND count(*) < max(jsonb_array_length(request->'suite'->'tasks')
                           * (request->>'trials')::integer)))
"""


class StrandedRun(BaseModel):
    """An API run the sweep looks at: whose, its recorded request, its idle trials."""

    model_config = ConfigDict(frozen=True)

    owner: UUID
    name: str
    request: dict[str, Any]
    #: unscored trials no lease holds
    idle: list[UUID]

    @field_validator("request", mode="before")
    @classmethod
    def _decoded(cls, value: Any) -> Any:
        return orjson.loads(value) if isinstance(value, str | bytes) else value


async def stranded_runs(store: EventStore, stop_kinds: Collection[str] = ()) -> list[StrandedRun]:
    """The candidates; a run stopped on a configuration error (a trial ended on one of
    ``stop_kinds``, see ``trial_stops``) is none: it waits for its user."""
    rows = await store.pool.fetch(STRANDED_RUNS_SQL, list(stop_kinds))
    return [StrandedRun.model_validate(dict(row)) for row in rows]
