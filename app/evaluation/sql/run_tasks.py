"""The tasks a run's trials recorded (each session's ``evaluation_task``), one per task id:
the suite a run of ``chronicle eval run`` was started with, as far as the log knows it (its
file is not kept)."""

from __future__ import annotations

import json
from typing import Any

from app.store import EventStore

RECORDED_TASKS_SQL = """
SELECT DISTINCT ON (c.payload -> 'config' -> 'evaluation_task' ->> 'id')
       (c.payload -> 'config' -> 'evaluation_task')::text AS task
FROM session_state s
JOIN events c ON c.session_id = s.session_id AND c.seq = 1
WHERE s.evaluation_run = $1 AND s.replay_of IS NULL AND s.forked_from IS NULL
  AND c.payload -> 'config' ? 'evaluation_task'
ORDER BY c.payload -> 'config' -> 'evaluation_task' ->> 'id', s.created_at
"""


async def recorded_tasks(store: EventStore, run: str) -> list[dict[str, Any]]:
    """Each task of ``run`` as its first trial recorded it, by id (empty: no trial); read
    as text, so the store's jsonb decoder (which tags escaped text) stays out of it. The
    caller brings ``session_state`` up to date first."""
    rows = await store.pool.fetch(RECORDED_TASKS_SQL, run)
    return [json.loads(row["task"]) for row in rows]
