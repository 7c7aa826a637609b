"""Where a session's workspace is in its log: the seq of its ``workspace.snapshot`` (the start)
and of its last ``workspace.diff`` (the change of its last run, against that start).

Only the seqs are read here (the kinds of one session's rows, no payload): the view then
reads those two events through the store, which resolves their blobs (a long patch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple
from uuid import UUID

from app.store import session_months

if TYPE_CHECKING:
    from app.store import EventStore

WORKSPACE_SEQS_SQL = f"""
SELECT min(seq) FILTER (WHERE kind = 'workspace.snapshot') AS start,
       max(seq) FILTER (WHERE kind = 'workspace.diff') AS change
FROM events
WHERE session_id = $1 AND kind IN ('workspace.snapshot', 'workspace.diff')
  AND {session_months("$1")}
"""


class WorkspaceSeqs(NamedTuple):
    start: int | None
    change: int | None


async def workspace_seqs(store: EventStore, session_id: UUID) -> WorkspaceSeqs:
    row = await store.pool.fetchrow(WORKSPACE_SEQS_SQL, session_id)
    return WorkspaceSeqs(row["start"], row["change"]) if row else WorkspaceSeqs(None, None)
