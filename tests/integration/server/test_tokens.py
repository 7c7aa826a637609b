"""Users and tokens in PostgreSQL as chronicle_app: only hashes stored, expiry and revocation
enforced by the lookup, kinds kept apart, and the app role unable to rewrite or delete them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from app.sessions.sql.users import (
    InvalidUserNameError,
    UserExistsError,
    add_user,
    authenticate,
    create_token,
    revoke_token,
    token_hash,
)
from app.store import EventStore


async def test_a_token_is_stored_as_its_hash_only(store: EventStore, superuser) -> None:
    user = await add_user(store, "ann")
    info, token = await create_token(store, user.id, label="laptop")
    rows = await superuser.fetch("SELECT * FROM api_tokens")
    assert len(rows) == 1 and rows[0]["hash"] == token_hash(token)
    dumped = " ".join(str(value) for value in rows[0].values())
    assert token not in dumped and token[4:] not in dumped
    principal = await authenticate(store, token, "api")
    assert principal is not None
    assert (principal.name, principal.token_id, principal.is_admin) == ("ann", info.id, False)


async def test_expired_revoked_and_wrong_kind_tokens_name_nobody(store: EventStore) -> None:
    user = await add_user(store, "bea")
    _, expired = await create_token(
        store, user.id, expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )
    assert await authenticate(store, expired, "api") is None
    live_info, live = await create_token(
        store, user.id, expires_at=datetime.now(UTC) + timedelta(hours=1)
    )
    assert await authenticate(store, live, "api") is not None
    assert await authenticate(store, live, "cookie") is None  # an API token is no cookie
    _, cookie = await create_token(store, user.id, kind="cookie")
    assert await authenticate(store, cookie, "api") is None  # nor a cookie a Bearer token
    assert await revoke_token(store, live_info.id)
    assert await authenticate(store, live, "api") is None
    assert not await revoke_token(store, live_info.id)  # revoked once


async def test_a_user_revokes_only_their_own_token(store: EventStore) -> None:
    one, two = await add_user(store, "cat"), await add_user(store, "dan")
    info, token = await create_token(store, one.id)
    assert not await revoke_token(store, info.id, user_id=two.id)
    assert await authenticate(store, token, "api") is not None


async def test_last_use_is_recorded(store: EventStore, superuser) -> None:
    user = await add_user(store, "eve")
    info, token = await create_token(store, user.id)
    await authenticate(store, token, "api")
    used = await superuser.fetchval("SELECT last_used_at FROM api_tokens WHERE id = $1", info.id)
    assert used is not None


async def test_names_are_unique_and_plain(store: EventStore) -> None:
    await add_user(store, "fay")
    with pytest.raises(UserExistsError, match="exists already"):
        await add_user(store, "fay")
    for bad in ("", "has space", "-dash", "x" * 65, "semi;colon"):
        with pytest.raises(InvalidUserNameError):
            await add_user(store, bad)


async def test_the_app_role_cannot_rewrite_or_delete_users_tokens_or_owners(
    store: EventStore, app_login: asyncpg.Connection
) -> None:
    user = await add_user(store, "gus")
    await create_token(store, user.id)
    for statement in (
        "UPDATE users SET is_admin = true",
        "DELETE FROM users",
        "UPDATE api_tokens SET hash = sha256('x'::bytea)",
        "UPDATE api_tokens SET expires_at = NULL",
        "UPDATE api_tokens SET user_id = user_id",
        "DELETE FROM api_tokens",
        "UPDATE session_owners SET user_id = user_id",
        "DELETE FROM session_owners",
        "TRUNCATE users CASCADE",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_login.execute(statement)
