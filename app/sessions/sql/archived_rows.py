"""The ``session_state`` rows of sessions being archived, as typed batches for Parquet.

An archive carries each session's row of the session list (title, status, model, tokens,
cost) as the projection had it, so an analyst reading the archive in place has the numbers
``chronicle sql`` gives over ``session_state`` without folding the events again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.store.analytics import Column

if TYPE_CHECKING:
    from app.store import EventStore

SESSION_STATE_SQL = """
SELECT * FROM session_state WHERE session_id = ANY($1::uuid[]) ORDER BY created_at, session_id
"""
BATCH = 5000


async def session_state_rows(
    store: EventStore, sessions: Sequence[UUID]
) -> AsyncIterator[tuple[list[Column], list[tuple[Any, ...]]]]:
    """The rows of ``sessions`` (a session the projection has not reached has none), in
    batches with their columns; one empty batch when there are none (the columns still)."""
    ids = list(sessions)
    async with store.pool.acquire() as connection, connection.transaction():
        statement = await connection.prepare(SESSION_STATE_SQL)
        columns = [Column(a.name, a.type.name) for a in statement.get_attributes()]
        rows: list[tuple[Any, ...]] = []
        sent = False
        async for row in statement.cursor(ids, prefetch=BATCH):
            rows.append(tuple(row))
            if len(rows) >= BATCH:
                yield columns, rows
                rows, sent = [], True
        if rows or not sent:
            yield columns, rows
