"""The playground runs made from one session's model calls (``app.external.playground``).

A run is a session whose ``session.created`` names the call it came from
(``config.from_call.session``); its ``llm.call`` is the event after it. Those events are
indexed by the session they came from (migration 0024, ``events_playground_runs``: the
``WHERE`` below repeats its predicate so the index is used). A member sees the runs they own;
an admin sees every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from app.events.session_config import json_has, json_path
from app.store import Record

if TYPE_CHECKING:
    from app.store import EventStore

_SOURCE = json_path("from_call", "session", alias="e")
#: The index's predicate (migration 0024).
_RUN = f"e.kind = 'session.created' AND {json_has('from_call', alias='e')}"
#: The run's call (``$3``: any when null).
_SEQ = (
    f"($3::int IS NULL OR {json_path('from_call', 'seq', alias='e', text=False)}"
    " = to_jsonb($3::int))"
)
_COLUMNS = f"""e.session_id, e.created_at, e.payload->>'title' AS title,
       {json_path("from_call", alias="e", text=False)} AS from_call,
       c.payload->>'model' AS model, c.payload->>'error' AS error,
       c.payload->>'error_kind' AS error_kind, c.payload->'cost_usd' AS cost_usd"""
_CALL = "LEFT JOIN events c ON c.session_id = e.session_id AND c.seq = 2 AND c.kind = 'llm.call'"
#: Every run of a session's calls (an admin's view), newest first.
ALL_RUNS_SQL = f"""
SELECT {_COLUMNS}
FROM events e
{_CALL}
WHERE {_RUN} AND {_SOURCE} = $1::text AND {_SEQ}
ORDER BY e.created_at DESC, e.session_id
LIMIT $2
"""
#: The runs one user owns.
OWN_RUNS_SQL = f"""
SELECT {_COLUMNS}
FROM events e
JOIN session_owners o ON o.session_id = e.session_id AND o.user_id = $4
{_CALL}
WHERE {_RUN} AND {_SOURCE} = $1::text AND {_SEQ}
ORDER BY e.created_at DESC, e.session_id
LIMIT $2
"""


async def playground_runs(
    store: EventStore, source: UUID, *, seq: int | None, owner: UUID | None, limit: int
) -> list[Record]:
    """The runs of ``source``'s calls (of its call at ``seq`` only, when given) ``owner``
    owns (None: everyone's), newest first."""
    if owner is None:
        return list(await store.pool.fetch(ALL_RUNS_SQL, str(source), limit, seq))
    return list(await store.pool.fetch(OWN_RUNS_SQL, str(source), limit, seq, owner))
