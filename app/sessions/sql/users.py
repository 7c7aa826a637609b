"""Users and their API tokens (migration 0009): only a token's sha256 is ever stored.

A token is ``chr_`` and 43 URL-safe characters (32 random bytes): far too many to guess, so
one unsalted sha256 is the right hash (a slow password hash buys nothing against a
256-bit secret and would cost every request). Looking a token up by its hash compares in the
database's unique index; the token itself never reaches the table or the log.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Literal
from uuid import UUID

from pydantic import BaseModel

from app.store import CheckViolationError, DatabaseError, StoreError, UniqueViolationError

if TYPE_CHECKING:
    from app.store import EventStore

TOKEN_PREFIX = "chr_"
TokenKind = Literal["api", "cookie"]

#: ``last_used_at`` is written at most this often per token (not on every request).
LAST_USED_RESOLUTION_SECONDS = 60


class UserExistsError(StoreError):
    def __init__(self, name: str) -> None:
        super().__init__(f"a user named {name!r} exists already; choose another name")


class UnknownUserError(StoreError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no user named {name!r}; add one with: chronicle users add {name}")


class InvalidUserNameError(StoreError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"{name!r} is not a user name: use 1 to 64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )


class OwnerLoginNeededError(StoreError):
    """Making an admin, or a token for one, needs the database owner's login (migration 0014):
    the application's login must not be able to mint an admin for itself."""

    def __init__(self, refusal: str) -> None:
        super().__init__(
            f"{refusal}. Run the command with CHRONICLE_OWNER_DATABASE_URL set to the owner's "
            "URL (the one `chronicle db migrate` uses); with the embedded database Chronicle "
            "uses its own"
        )


def _owner_refusal(exc: DatabaseError) -> Exception:
    """The database's CR015 (the owner's kind of write, asked by another login) as a user's
    error; anything else as it is."""
    if getattr(exc, "sqlstate", None) == "CR015":
        return OwnerLoginNeededError(str(exc))
    return exc


class User(BaseModel):
    id: UUID
    name: str
    is_admin: bool
    created_at: datetime
    #: Set while the user is disabled (``chronicle users disable``): no token or login works.
    disabled_at: datetime | None = None
    #: Set once the user is removed for good (``chronicle users remove``).
    removed_at: datetime | None = None


class TokenInfo(BaseModel):
    """What is known of a token: everything but the token."""

    id: UUID
    user_id: UUID
    user_name: str
    kind: TokenKind
    label: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


class Principal(BaseModel):
    """Who a request comes from: the user and the token it presented."""

    user_id: UUID
    name: str
    is_admin: bool
    token_id: UUID
    token_kind: TokenKind
    expires_at: datetime | None
    #: The token's label: ``session:<id>`` scopes it to one session (app/external/session_scope.py).
    label: str = ""


def new_token() -> str:
    """A fresh secret token (shown once, never stored)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    """What the table keeps of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


async def add_user(store: EventStore, name: str, *, is_admin: bool = False) -> User:
    """Add a user; an admin only through the database owner's login (``OwnerLoginNeededError``)."""
    try:
        row = await store.pool.fetchrow(
            "SELECT * FROM chronicle_add_user($1, $2, $3)", uuid.uuid4(), name, is_admin
        )
    except UniqueViolationError:
        raise UserExistsError(name) from None
    except CheckViolationError:
        raise InvalidUserNameError(name) from None
    except DatabaseError as exc:
        raise _owner_refusal(exc) from None
    assert row is not None
    return User(**dict(row))


_USER_COLUMNS = "id, name, is_admin, created_at, disabled_at, removed_at"


async def list_users(store: EventStore) -> list[User]:
    rows = await store.pool.fetch(f"SELECT {_USER_COLUMNS} FROM users ORDER BY created_at, name")
    return [User(**dict(row)) for row in rows]


async def find_user(store: EventStore, name: str) -> User | None:
    row = await store.pool.fetchrow(f"SELECT {_USER_COLUMNS} FROM users WHERE name = $1", name)
    return User(**dict(row)) if row else None


async def create_token(
    store: EventStore,
    user_id: UUID,
    *,
    label: str = "",
    expires_at: datetime | None = None,
    kind: TokenKind = "api",
) -> tuple[TokenInfo, str]:
    """A new token for the user: its record and the token itself (to show once). Only its
    sha256 reaches the database; a token for an admin only through the owner's login."""
    token = new_token()
    try:
        row = await store.pool.fetchrow(
            "SELECT * FROM chronicle_create_token($1, $2, $3, $4, $5, $6)",
            uuid.uuid4(),
            user_id,
            kind,
            label,
            token_hash(token),
            expires_at,
        )
    except DatabaseError as exc:
        raise _owner_refusal(exc) from None
    assert row is not None
    return TokenInfo(**dict(row)), token


_TOKEN_COLUMNS = (
    "t.id, t.user_id, u.name AS user_name, t.kind, t.label, t.created_at, t.expires_at, "
    "t.revoked_at, t.last_used_at"
)


async def list_tokens(store: EventStore, *, kind: TokenKind | None = "api") -> list[TokenInfo]:
    rows = await store.pool.fetch(
        f"SELECT {_TOKEN_COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id "
        "WHERE $1::text IS NULL OR t.kind = $1 ORDER BY t.created_at, t.id",
        kind,
    )
    return [TokenInfo(**dict(row)) for row in rows]


async def revoke_token(store: EventStore, token_id: UUID, *, user_id: UUID | None = None) -> bool:
    """Revoke the token (of ``user_id`` only, if given); False if there is no such live token."""
    return bool(
        await store.pool.fetchval("SELECT chronicle_revoke_token($1, $2)", token_id, user_id)
    )


async def authenticate(store: EventStore, token: str, kind: TokenKind) -> Principal | None:
    """The principal of a live (not revoked, not expired) token of this kind whose user is
    neither disabled nor removed, or None. The token is found by its hash through the
    database's ``chronicle_token_by_hash``: the application's login cannot read the hashes.

    ``last_used_at`` is brought up to date when it is older than a minute."""
    row = await store.pool.fetchrow(
        "SELECT t.id AS token_id, t.kind AS token_kind, t.expires_at, t.last_used_at, "
        "l.label, u.id AS user_id, u.name, u.is_admin "
        "FROM chronicle_token_by_hash($1) t JOIN users u ON u.id = t.user_id "
        "JOIN api_tokens l ON l.id = t.id "  # its label, which that function does not return
        "WHERE t.kind = $2 AND t.revoked_at IS NULL "
        "AND (t.expires_at IS NULL OR t.expires_at > now()) "
        "AND u.disabled_at IS NULL AND u.removed_at IS NULL",
        token_hash(token),
        kind,
    )
    if row is None:
        return None
    await store.pool.execute(
        "SELECT chronicle_touch_token($1, $2)", row["token_id"], LAST_USED_RESOLUTION_SECONDS
    )
    values = dict(row)
    values.pop("last_used_at")
    return Principal(**values)
