"""An evaluation run as the report views of migration 0009 give it: each trial
(``evaluation_sessions``) and each section of the report (``evaluation_summary``,
``evaluation_endings``, ``evaluation_usage``, ``evaluation_latency``,
``evaluation_tool_errors``, ``evaluation_replays``), so what ``chronicle eval report``
prints is what an analyst's query of the same views returns."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.store import EventStore

RUN_RESULTS_SQL = """
SELECT session_id, task_id, epoch, status, ending, steps, cost_usd, verdicts::text AS labels,
       passed, model_calls, input_tokens, output_tokens, wall_seconds, replay_of
FROM evaluation_sessions
WHERE evaluation_run = $1
ORDER BY created_at, session_id
"""
SUMMARY_SQL = "SELECT * FROM evaluation_summary WHERE evaluation_run = $1"
ENDINGS_SQL = (
    "SELECT ending, sessions FROM evaluation_endings WHERE evaluation_run = $1 ORDER BY ending"
)
USAGE_SQL = "SELECT * FROM evaluation_usage WHERE evaluation_run = $1"
LATENCY_SQL = "SELECT * FROM evaluation_latency WHERE evaluation_run = $1"
TOOL_ERRORS_SQL = "SELECT * FROM evaluation_tool_errors WHERE evaluation_run = $1"
#: The explanation of each score that counts on each trial (per scorer the newest score of its
#: highest version, as ``evaluation_sessions`` picks its verdicts): why a trial failed.
EXPLANATIONS_SQL = """
SELECT DISTINCT ON (e.session_id, e.payload ->> 'name')
       e.session_id, e.payload ->> 'name' AS name, e.payload ->> 'explanation' AS explanation
FROM evaluation_sessions s
JOIN events e ON e.session_id = s.session_id AND e.kind = 'eval.score'
WHERE s.evaluation_run = $1
ORDER BY e.session_id, e.payload ->> 'name',
         COALESCE((e.payload ->> 'scorer_version')::integer, 1) DESC, e.seq DESC
"""
REPLAYS_SQL = """
SELECT task_id, epoch, session_id, replay_of, matched, divergence_step, divergence_kind,
       divergence
FROM evaluation_replays WHERE evaluation_run = $1 ORDER BY task_id, epoch
"""


class EvaluationRow(BaseModel):
    """One trial of a run (its newest attempt), as a report reads it."""

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    task_id: str | None
    epoch: int | None
    status: str | None
    steps: int
    cost_usd: Decimal | None
    #: scorer name -> the label of its score that counts (None: a measure, not a verdict)
    labels: dict[str, str | None]
    #: as ``evaluation_sessions`` decided it (None: decide from ``labels``)
    passed: bool | None = None
    ending: str | None = None
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    wall_seconds: Decimal | None = None
    replay_of: UUID | None = None
    #: scorer name -> the explanation of its score that counts
    explanations: dict[str, str | None] = {}


class ReplayRow(BaseModel):
    """A replay of a recorded trial: matched, or where it first diverged."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    epoch: int
    session_id: UUID
    replay_of: UUID
    matched: bool
    divergence_step: int | None
    divergence_kind: str | None
    divergence: str | None


class RunSections(BaseModel):
    """The run-wide sections, one view each (a section with no rows is None: e.g. no tool
    was called, no model call answered)."""

    model_config = ConfigDict(frozen=True)

    summary: dict[str, Any]
    endings: dict[str, int]
    usage: dict[str, Any]
    latency: dict[str, Any] | None
    tool_errors: dict[str, Any] | None
    replays: list[ReplayRow]


async def evaluation_run_results(
    store: EventStore, run: str
) -> tuple[list[EvaluationRow], RunSections] | None:
    """The run's trials (oldest first) and its sections, read in one snapshot so they agree
    (None: no session was run under that name); the caller brings ``session_state`` up to
    date first."""
    async with (
        store.pool.acquire() as connection,
        connection.transaction(isolation="repeatable_read", readonly=True),
    ):
        summary = await connection.fetchrow(SUMMARY_SQL, run)
        if summary is None:
            return None
        trials = await connection.fetch(RUN_RESULTS_SQL, run)
        explained = await connection.fetch(EXPLANATIONS_SQL, run)
        endings = await connection.fetch(ENDINGS_SQL, run)
        usage = await connection.fetchrow(USAGE_SQL, run)
        latency = await connection.fetchrow(LATENCY_SQL, run)
        tool_errors = await connection.fetchrow(TOOL_ERRORS_SQL, run)
        replays = await connection.fetch(REPLAYS_SQL, run)
    explanations: dict[UUID, dict[str, str | None]] = {}
    for row in explained:
        explanations.setdefault(row["session_id"], {})[row["name"]] = row["explanation"]
    rows = [
        EvaluationRow.model_validate(
            {
                **dict(row),
                "labels": _labels(row["labels"]),
                "explanations": explanations.get(row["session_id"], {}),
            }
        )
        for row in trials
    ]
    return rows, RunSections(
        summary=_section(summary),
        # a trial with no state yet has no ending: "unknown", as the statuses say
        endings={row["ending"] or "unknown": row["sessions"] for row in endings},
        usage=_section(usage),
        latency=_section(latency),
        tool_errors=_section(tool_errors),
        replays=[ReplayRow.model_validate(dict(row)) for row in replays],
    )


def _section(row: Any) -> Any:
    """A view's row without its run column (None stays None)."""
    if row is None:
        return None
    return {key: value for key, value in dict(row).items() if key != "evaluation_run"}


def _labels(raw: str) -> dict[str, str | None]:
    """As text, so the store's jsonb decoder (which tags escaped text) stays out of it."""
    value = json.loads(raw)
    return dict(value) if isinstance(value, dict) else {}
