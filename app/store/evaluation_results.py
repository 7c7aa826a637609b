"""Each session of an evaluation run with its task, epoch, totals and the verdict labels
that count (the newest ``eval.score`` per scorer, of its highest version), in one query over
``session_state`` and the log."""

from __future__ import annotations

import json
from decimal import Decimal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.store.event_store import EventStore

RUN_RESULTS_SQL = """
SELECT s.session_id, s.status, s.steps, s.cost_usd,
       c.payload->'config'->'evaluation_task'->>'id' AS task_id,
       (c.payload->'config'->>'evaluation_epoch')::int AS epoch,
       (COALESCE((
           SELECT jsonb_object_agg(latest.name, latest.label)
           FROM (
               SELECT DISTINCT ON (e.payload->>'name')
                      e.payload->>'name' AS name, e.payload->>'score_label' AS label
               FROM events e
               WHERE e.session_id = s.session_id AND e.kind = 'eval.score'
               ORDER BY e.payload->>'name',
                        COALESCE((e.payload->>'scorer_version')::int, 1) DESC,
                        e.seq DESC
           ) latest
       ), '{}'::jsonb))::text AS labels
FROM session_state s
JOIN events c ON c.session_id = s.session_id AND c.seq = 1
WHERE s.evaluation_run = $1
ORDER BY s.created_at, s.session_id
"""


class EvaluationRow(BaseModel):
    """One session of a run, as a report reads it."""

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    task_id: str | None
    epoch: int | None
    status: str | None
    steps: int
    cost_usd: Decimal | None
    #: scorer name -> the label of its score that counts (None: a measure, not a verdict)
    labels: dict[str, str | None]


async def evaluation_run_results(store: EventStore, run: str) -> list[EvaluationRow]:
    """The run's sessions, oldest first (empty: no session was run under that name); the
    caller brings ``session_state`` up to date first."""
    rows = await store.pool.fetch(RUN_RESULTS_SQL, run)
    return [
        EvaluationRow(
            session_id=row["session_id"],
            task_id=row["task_id"],
            epoch=row["epoch"],
            status=row["status"],
            steps=row["steps"],
            cost_usd=row["cost_usd"],
            labels=_labels(row["labels"]),
        )
        for row in rows
    ]


def _labels(raw: str) -> dict[str, str | None]:
    """As text, so the store's jsonb decoder (which tags escaped text) stays out of it."""
    value = json.loads(raw)
    return dict(value) if isinstance(value, dict) else {}
