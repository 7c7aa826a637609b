"""The review queue: the sessions one user may see that match a filter and nobody reviewed yet
(``annotations``'s definition of reviewed), newest first, and how many there are.

Both are the session list's own queries (``session_rows.list_sql`` and ``totals_sql``) with
``unreviewed``, so the queue and the list agree on every filter; the count is capped
(``cap``), so a queue of a million sessions costs a bounded read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from app.sessions.sql.session_owners import SessionFilters, list_visible_records, visible_totals
from app.sessions.sql.session_rows import ListedState
from app.store import Record

if TYPE_CHECKING:
    from app.store import EventStore


async def unreviewed(
    store: EventStore,
    *,
    owner: UUID | None,
    limit: int,
    cap: int,
    state: ListedState | None = None,
    model: str | None = None,
    label: str | None = None,
    tag: str | None = None,
) -> tuple[list[Record], int]:
    """The first ``limit`` sessions of the queue, and how many it holds (at most ``cap``)."""
    filters = SessionFilters(state=state, model=model, label=label, tag=tag, unreviewed=True)
    rows = await list_visible_records(store, owner=owner, limit=limit, filters=filters)
    # counted without the rows' columns: ``claimed`` reads pg_locks, once per row
    totals = await visible_totals(store, owner=owner, filters=filters, cap=cap)
    count: int = totals["sessions"]
    return rows, count
