"""Which sessions a user may touch: their own; an admin every one.

Every route that names a session asks ``ensure_visible`` first and answers 404 for a
session the user may not see, exactly as for one that does not exist, so another user's
session ids cannot even be confirmed.

The platform audit log (app/events/platform_audit.py) is a stream of the events table but
nobody's session: 404 here for everyone, admins included (they read it at ``/api/audit``),
so no session route can post to it, fork it or replay it. An admin's visit to a session
another user owns is recorded in that log (``AdminReads``: once an hour per credential).
"""

from __future__ import annotations

from uuid import UUID

from app.events.platform_audit import PLATFORM_LOG_ID
from app.server.client_address import client_address
from app.server.context import ServerContext
from app.server.problems import NotFound
from app.sessions.sql.session_owners import owner_of
from app.sessions.sql.users import Principal


def not_found(session_id: UUID) -> NotFound:
    return NotFound(f"no session {session_id} (or it is not yours)")


async def ensure_visible(ctx: ServerContext, principal: Principal, session_id: UUID) -> None:
    """Raise 404 unless the session exists and ``principal`` may see it."""
    if session_id == PLATFORM_LOG_ID:
        raise not_found(session_id)
    if principal.is_admin:
        if await ctx.store.last_seq(session_id) <= 0:
            if await owner_of(ctx.store, session_id) is None:
                raise not_found(session_id)
        await ctx.admin_reads.read(ctx.store, principal, session_id, client_address())
        return
    if await owner_of(ctx.store, session_id) != principal.user_id:
        raise not_found(session_id)


def owner_filter(principal: Principal) -> UUID | None:
    """The owner a list is narrowed to (None: an admin sees all)."""
    return None if principal.is_admin else principal.user_id
