"""Which sessions a session-id prefix names (``app/events/id_prefix.py``): a range of the uuid
index, on the log itself (a session is there before the list's projection sees it) or, for
a member, on the sessions they own."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from app.events.id_prefix import SHOWN_MATCHES, prefix_range

if TYPE_CHECKING:
    from app.store import EventStore

#: Every session has its first event; the range walks (session_id, seq) in the index.
ANY_SESSION_SQL = """
SELECT session_id FROM events
WHERE session_id BETWEEN $1 AND $2 AND seq = 1
ORDER BY session_id LIMIT $3
"""
OWNED_SQL = """
SELECT session_id FROM session_owners
WHERE session_id BETWEEN $1 AND $2 AND user_id = $4
ORDER BY session_id LIMIT $3
"""


async def sessions_beginning(
    store: EventStore, prefix: str, *, owner: UUID | None = None, limit: int = SHOWN_MATCHES + 1
) -> list[UUID]:
    """Up to ``limit`` session ids beginning with ``prefix`` (its hex digits), of ``owner``'s
    sessions when given, else of every session; one id back means the prefix is unique."""
    low, high = prefix_range(prefix)
    if owner is None:
        rows = await store.pool.fetch(ANY_SESSION_SQL, low, high, limit)
    else:
        rows = await store.pool.fetch(OWNED_SQL, low, high, limit, owner)
    return [row["session_id"] for row in rows]
