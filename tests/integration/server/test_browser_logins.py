"""Browser logins and sign-in codes in the database (migration 0015), as the application and a
compromised application's login meet them: a code works once even when two exchanges race,
the application's login writes no login or code row itself and reads no code, and cannot make
a sign-in link for an admin; a login lives only while its token and its user do."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import asyncpg
import pytest

from app.server.sql.logins import (
    authenticate_login,
    begin_login,
    create_login_code,
    exchange_login_code,
    peek_login_code,
)
from app.server.sql.user_states import disable_user, enable_user
from app.sessions.sql.users import OwnerLoginNeededError, add_user, create_token, revoke_token
from app.store import EventStore

FORGED_HASH = hashlib.sha256(b"chl_forged").digest()


async def test_a_code_signs_in_once_even_when_two_exchanges_race(store: EventStore) -> None:
    user = await add_user(store, "ada")
    code, _ = await create_login_code(store, user.id, minutes=5)
    results = await asyncio.gather(
        *(exchange_login_code(store, code, hours=1, address="") for _ in range(8))
    )
    won = [result for result in results if result is not None]
    assert len(won) == 1 and won[0].principal.name == "ada"
    assert await authenticate_login(store, won[0].cookie) is not None


async def test_a_login_lives_only_while_its_token_and_user_do(
    store: EventStore, owner_store: EventStore
) -> None:
    user = await add_user(store, "bea")
    info, token = await create_token(store, user.id)
    started = await begin_login(store, token, hours=1, address="10.0.0.9")
    assert started is not None and started.made_with == info.id
    assert await authenticate_login(store, started.cookie) is not None
    await disable_user(owner_store, "bea")
    assert await authenticate_login(store, started.cookie) is None
    assert await begin_login(store, token, hours=1, address="") is None
    await enable_user(owner_store, "bea")
    again = await begin_login(store, token, hours=1, address="")
    assert again is not None
    assert await revoke_token(store, info.id)
    assert await authenticate_login(store, again.cookie) is None


async def test_a_peek_names_the_codes_user_and_uses_nothing_up(
    store: EventStore, owner_store: EventStore
) -> None:
    user = await add_user(store, "edda")
    code, expires = await create_login_code(store, user.id, minutes=5)
    for _ in range(3):
        holder = await peek_login_code(store, code)
        assert holder is not None
        assert (holder.user, holder.is_admin, holder.expires_at) == ("edda", False, expires)
    started = await exchange_login_code(store, code, hours=1, address="")
    assert started is not None and started.principal.name == "edda"
    assert await peek_login_code(store, code) is None  # used: named no more
    assert await peek_login_code(store, "chc_" + uuid.uuid4().hex) is None

    # a code the exchange would refuse is named by nobody: its user disabled, its token revoked
    other, _ = await create_login_code(store, user.id, minutes=5)
    await disable_user(owner_store, "edda")
    assert await peek_login_code(store, other) is None
    await enable_user(owner_store, "edda")
    assert await peek_login_code(store, other) is not None
    info, _ = await create_token(store, user.id)
    bound, _ = await create_login_code(store, user.id, minutes=5, token_id=info.id)
    assert await peek_login_code(store, bound) is not None
    assert await revoke_token(store, info.id)
    assert await peek_login_code(store, bound) is None
    assert await exchange_login_code(store, bound, hours=1, address="") is None


async def test_the_app_login_peeks_only_through_the_function(
    store: EventStore, app_login: asyncpg.Connection
) -> None:
    user = await add_user(store, "fern")
    code, _ = await create_login_code(store, user.id, minutes=5)
    row = await app_login.fetchrow(
        "SELECT * FROM chronicle_peek_login_code($1)", hashlib.sha256(code.encode()).digest()
    )
    assert row is not None and row["name"] == "fern"
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_login.fetch("SELECT user_id, expires_at FROM login_codes")


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO browser_logins (id, user_id, hash, expires_at) "
        "SELECT gen_random_uuid(), id, $1, now() + interval '1 day' FROM users",
        "UPDATE browser_logins SET ended_at = NULL, expires_at = now() + interval '1 year'",
        "INSERT INTO login_codes (id, user_id, hash, expires_at) "
        "SELECT gen_random_uuid(), id, $1, now() + interval '1 day' FROM users",
        "SELECT hash FROM login_codes",
        "UPDATE users SET disabled_at = NULL",
    ],
)
async def test_the_app_login_writes_no_login_or_code_itself(
    store: EventStore, app_login: asyncpg.Connection, statement: str
) -> None:
    await add_user(store, "cleo")
    arguments = (FORGED_HASH,) if "$1" in statement else ()
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_login.execute(statement, *arguments)


async def test_only_the_owner_makes_a_sign_in_link_for_an_admin(
    store: EventStore, owner_store: EventStore
) -> None:
    admin = await add_user(owner_store, "dora", is_admin=True)
    with pytest.raises(OwnerLoginNeededError):
        await create_login_code(store, admin.id, minutes=5)
    code, _ = await create_login_code(owner_store, admin.id, minutes=5)
    started = await exchange_login_code(store, code, hours=1, address="")
    assert started is not None and started.principal.is_admin
    assert await exchange_login_code(store, "chc_" + uuid.uuid4().hex, hours=1, address="") is None
