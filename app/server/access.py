"""Which sessions a user may touch: their own; an admin every one.

Every route that names a session asks ``ensure_visible`` first and answers 404 for a
session the user may not see, exactly as for one that does not exist, so another user's
session ids cannot even be confirmed.
"""

from __future__ import annotations

from uuid import UUID

from app.server.context import ServerContext
from app.server.problems import NotFound
from app.store.session_owners import owner_of
from app.store.users import Principal


def not_found(session_id: UUID) -> NotFound:
    return NotFound(f"no session {session_id} (or it is not yours)")


async def ensure_visible(ctx: ServerContext, principal: Principal, session_id: UUID) -> None:
    """Raise 404 unless the session exists and ``principal`` may see it."""
    if principal.is_admin:
        if await ctx.store.last_seq(session_id) > 0:
            return
        if await owner_of(ctx.store, session_id) is not None:
            return
        raise not_found(session_id)
    if await owner_of(ctx.store, session_id) != principal.user_id:
        raise not_found(session_id)


def owner_filter(principal: Principal) -> UUID | None:
    """The owner a list is narrowed to (None: an admin sees all)."""
    return None if principal.is_admin else principal.user_id
