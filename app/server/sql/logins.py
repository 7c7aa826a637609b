"""Browser logins and the one-time codes of sign-in links (migration 0015).

A browser login is a session cookie of its own (never an API token: logging out ends only the
browser's login). It is made from an API token pasted into the page (``begin_login``) or from
a sign-in link's one-time code (``exchange_login_code``), and it is live only while it is not
ended or expired, its user is neither disabled nor removed, and the API token it was made with
(if any) is live: ``authenticate_login`` checks all of it in one query on every request, so a
revoked token or a disabled user ends the login at once.

A sign-in link carries a code, never a token: 32 random bytes, kept as a sha256, used once,
valid for minutes. ``peek_login_code`` says whom a code signs in as without using it, so the
page can name that user before the person agrees. Every write goes through the database's
definer functions; this module is their only caller.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import BaseModel

from app.sessions.sql.users import (
    LAST_USED_RESOLUTION_SECONDS,
    OwnerLoginNeededError,
    Principal,
    token_hash,
)
from app.store import DatabaseError, Record, StoreError

if TYPE_CHECKING:
    from app.store import EventStore

#: What a session cookie starts with (an API token starts with ``chr_``).
LOGIN_PREFIX = "chl_"
#: What a sign-in link's code starts with.
CODE_PREFIX = "chc_"


class BrowserLogin(BaseModel):
    """What is known of a browser login: everything but its cookie."""

    id: UUID
    user_id: UUID
    user_name: str
    token_id: UUID | None
    address: str
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None
    last_used_at: datetime | None


class CodeHolder(BaseModel):
    """Whom a live sign-in code signs in as, and until when it works."""

    user: str
    is_admin: bool
    expires_at: datetime


class LoginStarted(BaseModel):
    """A new login: its principal (``token_id`` is the login's id), the API token it was made
    with (None: a sign-in link made for the user), and the cookie to set (the browser's only)."""

    principal: Principal
    made_with: UUID | None
    cookie: str


def _principal(row: Record) -> Principal:
    """A login's principal: its ``token_id`` is the login's id."""
    return Principal(
        user_id=row["user_id"],
        name=row["name"],
        is_admin=row["is_admin"],
        token_id=row["login_id"],
        token_kind="cookie",
        expires_at=row["expires_at"],
    )


def _started(row: Record | None, cookie: str) -> LoginStarted | None:
    if row is None:
        return None
    return LoginStarted(principal=_principal(row), made_with=row["token_id"], cookie=cookie)


async def begin_login(
    store: EventStore, token: str, *, hours: float, address: str
) -> LoginStarted | None:
    """A login made with a live API token (None when the token is not live, or its user is
    disabled). It lives ``hours`` and never past the token's own expiry."""
    cookie = LOGIN_PREFIX + secrets.token_urlsafe(32)
    row = await store.pool.fetchrow(
        "SELECT * FROM chronicle_begin_login($1, $2, $3, $4, $5)",
        token_hash(token),
        uuid.uuid4(),
        token_hash(cookie),
        hours,
        address,
    )
    return _started(row, cookie)


async def create_login_code(
    store: EventStore, user_id: UUID, *, minutes: float, token_id: UUID | None = None
) -> tuple[str, datetime]:
    """A one-time sign-in code for the user (bound to ``token_id`` when given: the login it
    makes then ends with that token), and when it expires. The code is shown once."""
    code = CODE_PREFIX + secrets.token_urlsafe(32)
    try:
        expires = await store.pool.fetchval(
            "SELECT chronicle_create_login_code($1, $2, $3, $4, $5)",
            user_id,
            token_id,
            uuid.uuid4(),
            token_hash(code),
            minutes,
        )
    except DatabaseError as exc:
        if getattr(exc, "sqlstate", None) == "CR015":  # an admin's link, by the app's login
            raise OwnerLoginNeededError(str(exc)) from None
        if getattr(exc, "sqlstate", None) == "CR010":
            raise StoreError(f"no link made: {exc}") from None
        raise
    assert isinstance(expires, datetime)
    return code, expires


async def exchange_login_code(
    store: EventStore, code: str, *, hours: float, address: str
) -> LoginStarted | None:
    """A login for a sign-in link's code, which is used up by it; None when the code is
    unknown, used, expired, or its user (or token) is no longer live."""
    cookie = LOGIN_PREFIX + secrets.token_urlsafe(32)
    row = await store.pool.fetchrow(
        "SELECT * FROM chronicle_exchange_login_code($1, $2, $3, $4, $5)",
        token_hash(code),
        uuid.uuid4(),
        token_hash(cookie),
        hours,
        address,
    )
    return _started(row, cookie)


async def peek_login_code(store: EventStore, code: str) -> CodeHolder | None:
    """Whom a sign-in link's code would sign in as (the code stays unused); None when the
    exchange would refuse it: unknown, used, expired, or its user (or token) no longer live."""
    row = await store.pool.fetchrow("SELECT * FROM chronicle_peek_login_code($1)", token_hash(code))
    if row is None:
        return None
    return CodeHolder(user=row["name"], is_admin=row["is_admin"], expires_at=row["expires_at"])


async def authenticate_login(store: EventStore, cookie: str) -> Principal | None:
    """The principal of a live login's cookie, or None. Live: not ended, not expired, its
    user enabled, and the API token it came from (if any) neither revoked nor expired."""
    row = await store.pool.fetchrow(
        "SELECT l.id AS login_id, l.expires_at, l.last_used_at, u.id AS user_id, u.name, "
        "u.is_admin FROM browser_logins l JOIN users u ON u.id = l.user_id "
        "LEFT JOIN api_tokens t ON t.id = l.token_id "
        "WHERE l.hash = $1 AND l.ended_at IS NULL AND l.expires_at > now() "
        "AND u.disabled_at IS NULL AND u.removed_at IS NULL "
        "AND (l.token_id IS NULL OR (t.revoked_at IS NULL "
        "AND (t.expires_at IS NULL OR t.expires_at > now())))",
        token_hash(cookie),
    )
    if row is None:
        return None
    last_used = row["last_used_at"]
    stale = datetime.now(UTC) - timedelta(seconds=LAST_USED_RESOLUTION_SECONDS)
    if last_used is None or last_used < stale:
        await store.pool.execute(
            "SELECT chronicle_touch_login($1, $2)", row["login_id"], LAST_USED_RESOLUTION_SECONDS
        )
    return _principal(row)


async def still_live(store: EventStore, principal: Principal) -> bool:
    """Whether the credentials a request (or a live stream) was let in with still hold, as
    they were: the token or login live, its user enabled, and an admin still an admin."""
    if principal.token_kind == "cookie":
        query = (
            "SELECT 1 FROM browser_logins l JOIN users u ON u.id = l.user_id "
            "LEFT JOIN api_tokens t ON t.id = l.token_id "
            "WHERE l.id = $1 AND l.ended_at IS NULL AND l.expires_at > now() "
            "AND (l.token_id IS NULL OR (t.revoked_at IS NULL "
            "AND (t.expires_at IS NULL OR t.expires_at > now())))"
        )
    else:
        query = (
            "SELECT 1 FROM api_tokens t JOIN users u ON u.id = t.user_id "
            "WHERE t.id = $1 AND t.revoked_at IS NULL "
            "AND (t.expires_at IS NULL OR t.expires_at > now())"
        )
    found = await store.pool.fetchval(
        f"{query} AND u.disabled_at IS NULL AND u.removed_at IS NULL AND u.is_admin = $2",
        principal.token_id,
        principal.is_admin,
    )
    return found is not None


async def end_logins(store: EventStore, user_id: UUID, login_id: UUID | None = None) -> int:
    """End the user's live logins (only ``login_id``, if given); how many ended."""
    ended = await store.pool.fetchval("SELECT chronicle_end_logins($1, $2)", user_id, login_id)
    return int(ended or 0)


async def list_logins(
    store: EventStore, user_id: UUID, *, live_only: bool = True
) -> list[BrowserLogin]:
    """The user's browser logins, oldest first (only those still live, by default)."""
    rows = await store.pool.fetch(
        "SELECT l.id, l.user_id, u.name AS user_name, l.token_id, l.address, l.created_at, "
        "l.expires_at, l.ended_at, l.last_used_at "
        "FROM browser_logins l JOIN users u ON u.id = l.user_id "
        "LEFT JOIN api_tokens t ON t.id = l.token_id "
        "WHERE l.user_id = $1 AND (NOT $2 OR (l.ended_at IS NULL AND l.expires_at > now() "
        "AND (l.token_id IS NULL OR (t.revoked_at IS NULL "
        "AND (t.expires_at IS NULL OR t.expires_at > now()))))) "
        "ORDER BY l.created_at, l.id",
        user_id,
        live_only,
    )
    return [BrowserLogin(**dict(row)) for row in rows]
