"""The platform audit log's reads and writes (app/events/platform_audit.py says what it is).

It is one stream of the events table, so appending is the store's ``append`` (the chain,
the per-session lock, the NOTIFY) and verifying is ``verify``; what is here is making sure
the stream starts with its ``session.created``, reading it from a time on, and the two
lookups the recorder needs (who owns a session, whose a token is, by name).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from app.events.platform_audit import PLATFORM_LOG_ID, AuditEvent, platform_log_created
from app.store import RecordedEvent

if TYPE_CHECKING:
    from app.store import EventStore

FIRST_SINCE_SQL = "SELECT min(seq) FROM events WHERE session_id = $1 AND created_at >= $2"
OWNER_SQL = (
    "SELECT u.id, u.name FROM session_owners o JOIN users u ON u.id = o.user_id "
    "WHERE o.session_id = $1"
)
TOKEN_OWNER_SQL = "SELECT u.name FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = $1"


async def append_audit(store: EventStore, event: AuditEvent) -> RecordedEvent:
    """Record ``event`` at the end of the platform log, creating the log first if need be.

    The log's ``session.created`` has a fixed event id, so processes that find the log empty
    at once all append it and it is recorded once (a re-sent append writes nothing); each
    appends its own event after it."""
    if await store.last_seq(PLATFORM_LOG_ID) == 0:
        await store.append(PLATFORM_LOG_ID, [platform_log_created()])
    [recorded] = await store.append(PLATFORM_LOG_ID, [event])
    return recorded


async def read_audit(
    store: EventStore,
    *,
    since: datetime | None = None,
    after_seq: int = 0,
    limit: int | None = None,
) -> list[RecordedEvent]:
    """The audit events after ``after_seq`` (and from the first one at ``since`` on), in
    order; the log's own ``session.created`` is left out."""
    if since is not None:
        first = await store.pool.fetchval(FIRST_SINCE_SQL, PLATFORM_LOG_ID, since)
        if first is None:
            return []
        after_seq = max(after_seq, int(first) - 1)
    events = await store.read(PLATFORM_LOG_ID, after_seq, limit)
    return [event for event in events if event.kind != "session.created"]


async def session_owner(store: EventStore, session_id: UUID) -> tuple[UUID, str] | None:
    """The id and name of the user who owns the session (None: no API user does)."""
    row = await store.pool.fetchrow(OWNER_SQL, session_id)
    return (row["id"], row["name"]) if row else None


async def token_owner(store: EventStore, token_id: UUID) -> str | None:
    """The name of the user a token belongs to (None: no such token)."""
    name = await store.pool.fetchval(TOKEN_OWNER_SQL, token_id)
    return str(name) if name is not None else None
