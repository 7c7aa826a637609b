"""The review queue: the sessions one user may see that match a filter and nobody reviewed yet
(``annotations``'s definition of reviewed), newest first, and how many there are.

Both are the session list's own query (``session_rows.list_sql``) with ``unreviewed``, so the
queue and the list agree on every filter; the count is capped (``cap``), so a queue of a
million sessions costs a bounded read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.sessions.sql.session_owners import list_visible_records
from app.sessions.sql.session_rows import CLAIMED, QUALIFIED_COLUMNS, ListedState, list_sql
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
    filters: dict[str, Any] = {"state": state, "model": model, "label": label, "tag": tag}
    rows = await list_visible_records(store, owner=owner, limit=limit, unreviewed=True, **filters)
    sql, params = list_sql(
        owner=owner is not None,
        state=state,
        model=model is not None,
        since=False,
        label=label is not None,
        tag=tag is not None,
        unreviewed=True,
    )
    # counted without the rows' columns: ``claimed`` reads pg_locks, once per row
    listed = f"SELECT {QUALIFIED_COLUMNS}, {CLAIMED} AS claimed FROM "
    assert sql.startswith(listed), "session_rows.list_sql changed its select list"
    values: dict[str, Any] = {**filters, "owner": owner, "limit": cap}
    count: int = await store.pool.fetchval(
        f"SELECT count(*) FROM (SELECT 1 FROM {sql.removeprefix(listed)}) q",
        *(values[name] for name in params),
    )
    return rows, count
