"""The scores that count on one trial, read in SQL: per scorer the newest score of its
highest version (as ``evaluation_sessions`` picks a trial's verdicts), with its explanation."""

from __future__ import annotations

from uuid import UUID

from app.store import EventStore

COUNTED_SCORES_SQL = """
SELECT DISTINCT ON (payload ->> 'name')
       payload ->> 'name' AS name, payload ->> 'score_label' AS label
FROM events
WHERE session_id = $1 AND kind = 'eval.score'
ORDER BY payload ->> 'name', COALESCE((payload ->> 'scorer_version')::integer, 1) DESC, seq DESC
"""


async def counted_labels(store: EventStore, session: UUID) -> dict[str, str | None]:
    """Scorer name -> the label of the score that counts on ``session`` (empty: unscored)."""
    rows = await store.pool.fetch(COUNTED_SCORES_SQL, session)
    return {row["name"]: row["label"] for row in rows}
