"""What an operator changes about a user: disable, enable, remove, promote, demote.

One function per change, so that whoever records changes (the platform's audit trail) has one
obvious place per action. Each goes through ``chronicle_set_user_state`` (migration 0015), which
also ends the user's browser logins when it disables or removes, and revokes every token on
removal; a trigger then tells every API process to forget the tokens it remembers, so the
change holds on the next request everywhere.

A removed user stays a row (the log and the sessions still name it) and cannot come back:
its name stays taken.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from app.sessions.sql.users import OwnerLoginNeededError, UnknownUserError, User, find_user
from app.store import DatabaseError, StoreError

if TYPE_CHECKING:
    from app.store import EventStore

UserState = Literal["disabled", "enabled", "removed", "admin", "member"]


class RemovedUserError(StoreError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"the user {name!r} was removed for good; add a user of another name instead"
        )


async def _live_user(store: EventStore, name: str) -> User:
    user = await find_user(store, name)
    if user is None:
        raise UnknownUserError(name)
    if user.removed_at is not None:
        raise RemovedUserError(name)
    return user


async def _set_state(store: EventStore, name: str, state: UserState) -> tuple[User, bool]:
    """The user, and whether it changed (False: it was in that state already)."""
    user = await _live_user(store, name)
    try:
        changed = await store.pool.fetchval(
            "SELECT chronicle_set_user_state($1, $2)", user.id, state
        )
    except DatabaseError as exc:
        if getattr(exc, "sqlstate", None) == "CR010":
            raise RemovedUserError(name) from None
        if getattr(exc, "sqlstate", None) == "CR015":  # any change, by the app's login
            raise OwnerLoginNeededError(str(exc)) from None
        raise
    return user, bool(changed)


async def disable_user(store: EventStore, name: str) -> tuple[User, bool]:
    """Refuse every token and end every browser login of the user until ``enable_user``."""
    return await _set_state(store, name, "disabled")


async def enable_user(store: EventStore, name: str) -> tuple[User, bool]:
    """Let a disabled user's live tokens work again (its ended logins stay ended)."""
    return await _set_state(store, name, "enabled")


async def remove_user(store: EventStore, name: str) -> tuple[User, bool]:
    """For good: every token revoked, every login ended, the name kept by the record."""
    return await _set_state(store, name, "removed")


async def promote_user(store: EventStore, name: str) -> tuple[User, bool]:
    """Make the user an admin (sees and steers every session)."""
    return await _set_state(store, name, "admin")


async def demote_user(store: EventStore, name: str) -> tuple[User, bool]:
    """Make an admin a plain user again (sees only its own sessions)."""
    return await _set_state(store, name, "member")
