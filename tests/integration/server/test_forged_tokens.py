"""A compromised application cannot mint an admin for itself (migration 0014).

Before it, chronicle_app could INSERT into ``users`` and ``api_tokens``: an attacker holding its
login added an admin and a token row whose sha256 it chose, and the API took that token. Now
the login writes neither table; the definer functions it may call make plain users and their
tokens, and only the database owner's login (the migrating role, the embedded superuser the
CLI uses) makes an admin or an admin's token — a rule of the tables themselves (triggers), so
no later writer can step around it.
"""

from __future__ import annotations

import hashlib
import uuid

import asyncpg
import pytest

from app.sessions.sql.users import OwnerLoginNeededError, add_user, authenticate, create_token
from app.store import EventStore

#: The token the attacker wants the API to accept (format-correct, its hash known).
FORGED = "chr_" + "A" * 43
FORGED_HASH = hashlib.sha256(FORGED.encode()).digest()


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO users (id, name, is_admin) VALUES (gen_random_uuid(), 'mallory', true)",
        "INSERT INTO api_tokens (id, user_id, hash) SELECT gen_random_uuid(), id, $1 FROM users",
        "UPDATE api_tokens SET revoked_at = NULL, hash = $1",
        "UPDATE api_tokens SET last_used_at = now()",
        "DELETE FROM api_tokens",
    ],
)
async def test_the_app_login_writes_no_user_or_token_row_itself(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection, statement: str
) -> None:
    admin = await add_user(owner_store, "root", is_admin=True)
    await create_token(owner_store, admin.id)
    arguments = (FORGED_HASH,) if "$1" in statement else ()
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_login.execute(statement, *arguments)
    assert await authenticate(store, FORGED, "api") is None


async def test_the_app_login_cannot_make_an_admin_through_the_functions(
    app_login: asyncpg.Connection, store: EventStore
) -> None:
    with pytest.raises(
        asyncpg.PostgresError, match="owner's login may make mallory an admin"
    ) as raised:
        await app_login.fetch(
            "SELECT * FROM chronicle_add_user(gen_random_uuid(), 'mallory', true)"
        )
    assert raised.value.sqlstate == "CR015"
    with pytest.raises(OwnerLoginNeededError, match="CHRONICLE_OWNER_DATABASE_URL"):
        await add_user(store, "mallory", is_admin=True)
    assert await app_login.fetchval("SELECT count(*) FROM users") == 0


async def test_the_app_login_cannot_make_a_token_for_an_admin(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    admin = await add_user(owner_store, "root", is_admin=True)
    with pytest.raises(asyncpg.PostgresError, match="owner's login may make a token for an admin"):
        await app_login.fetch(
            "SELECT * FROM chronicle_create_token(gen_random_uuid(), $1, 'api', 'x', $2, NULL)",
            admin.id,
            FORGED_HASH,
        )
    with pytest.raises(OwnerLoginNeededError):
        await create_token(store, admin.id)
    assert await authenticate(store, FORGED, "api") is None
    assert await app_login.fetchval("SELECT count(*) FROM api_tokens") == 0


async def test_the_app_login_cannot_read_a_token_hash_to_sign_in_as_an_admin(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    """A browser login is made from a token's hash (``chronicle_begin_login``, migration 0015):
    with the hashes readable, the application's login made an admin's browser login, with a
    cookie of its choosing, out of a hash it read from the table. The hashes are not readable
    now; everything else about a token is, and a token it is shown still finds its user."""
    admin = await add_user(owner_store, "root", is_admin=True)
    info, token = await create_token(owner_store, admin.id)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_login.fetchval("SELECT hash FROM api_tokens WHERE user_id = $1", admin.id)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_login.fetchval("SELECT id FROM api_tokens WHERE hash = $1", FORGED_HASH)
    listed = await app_login.fetchrow(
        "SELECT id, user_id, kind, label, expires_at, revoked_at, last_used_at FROM api_tokens"
    )
    assert listed["id"] == info.id
    principal = await authenticate(store, token, "api")
    assert principal is not None and principal.is_admin


async def test_plain_users_tokens_and_revocations_stay_the_applications(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    """What the running server and a plain user's token need keeps working as chronicle_app;
    a revoked token stays revoked, whoever asks."""
    user = await add_user(store, "ann")
    info, token = await create_token(store, user.id)
    principal = await authenticate(store, token, "api")
    assert principal is not None and not principal.is_admin
    assert await app_login.fetchval("SELECT chronicle_revoke_token($1, NULL)", info.id)
    assert await authenticate(store, token, "api") is None
    async with owner_store.pool.acquire() as owner:
        with pytest.raises(asyncpg.PostgresError, match="stays revoked"):
            await owner.execute("UPDATE api_tokens SET revoked_at = NULL WHERE id = $1", info.id)


async def test_the_owner_login_makes_admins_and_their_tokens(
    owner_store: EventStore, store: EventStore
) -> None:
    admin = await add_user(owner_store, f"root-{uuid.uuid4().hex[:6]}", is_admin=True)
    _, token = await create_token(owner_store, admin.id)
    principal = await authenticate(store, token, "api")
    assert principal is not None and principal.is_admin
