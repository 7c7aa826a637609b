"""Credentials the application's login made for a plain user do not become an admin's.

chronicle_app may make tokens, sign-in codes and browser logins for plain users (the API
does). Before, they outlived a promotion: an attacker holding that login planted a token (a
hash it chose) for every plain user, and the day the owner promoted one of them the planted
token was an admin's. Now promoting a user revokes every token of the user that the owner's
login did not make, ends the user's browser logins and voids their unused sign-in codes
(migrations 0014 and 0015); the owner's own tokens keep working.

Nor may that login change a user's state at all (the API never does; ``chronicle users``
connects as the owner): before, it re-enabled a user the operator had disabled, and could
disable, demote and remove every admin for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid

import asyncpg
import pytest

from app.server.sql.logins import (
    authenticate_login,
    begin_login,
    create_login_code,
    exchange_login_code,
)
from app.server.sql.user_states import (
    demote_user,
    disable_user,
    enable_user,
    promote_user,
    remove_user,
)
from app.sessions.sql.users import OwnerLoginNeededError, add_user, authenticate, create_token
from app.store import EventStore

#: The token the attacker plants: its hash chosen, handed to the definer function directly.
PLANTED = "chr_" + "P" * 43


async def _plant(app_login: asyncpg.Connection, user_id: uuid.UUID) -> None:
    await app_login.fetch(
        "SELECT * FROM chronicle_create_token(gen_random_uuid(), $1, 'api', 'x', $2, NULL)",
        user_id,
        hashlib.sha256(PLANTED.encode()).digest(),
    )


async def test_what_the_app_login_planted_is_gone_when_the_user_is_promoted(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    await _plant(app_login, bob.id)
    _, api_token = await create_token(store, bob.id)  # the user's own, through the API
    login = await begin_login(store, PLANTED, hours=1, address="198.51.100.7")
    assert login is not None
    code, _ = await create_login_code(store, bob.id, minutes=5)
    _, owners_token = await create_token(owner_store, bob.id)
    planted = await authenticate(store, PLANTED, "api")
    assert planted is not None and not planted.is_admin

    await promote_user(owner_store, "bob")

    assert await authenticate(store, PLANTED, "api") is None
    assert await authenticate(store, api_token, "api") is None
    assert await authenticate_login(store, login.cookie) is None
    assert await exchange_login_code(store, code, hours=1, address="198.51.100.7") is None
    admin = await authenticate(store, owners_token, "api")
    assert admin is not None and admin.is_admin


async def test_a_demoted_admin_promoted_again_loses_what_was_planted_meanwhile(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    root = await add_user(owner_store, "root", is_admin=True)
    await demote_user(owner_store, "root")
    await _plant(app_login, root.id)
    await promote_user(owner_store, "root")
    assert await authenticate(store, PLANTED, "api") is None


async def test_the_app_login_cannot_pass_its_token_off_as_the_owners(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    await _plant(app_login, bob.id)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_login.execute("UPDATE api_tokens SET by_owner = true")
    assert not await owner_store.pool.fetchval("SELECT bool_or(by_owner) FROM api_tokens")


async def test_the_app_login_changes_no_users_state(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    root = await add_user(owner_store, "root", is_admin=True)
    _, roots_token = await create_token(owner_store, root.id)
    mallory = await add_user(store, "mallory")
    _, mallorys_token = await create_token(store, mallory.id)
    await disable_user(owner_store, "mallory")  # the operator locks a compromised account out
    for user, state in ((mallory.id, "enabled"), (root.id, "member"), (root.id, "disabled"),
                        (root.id, "removed")):  # fmt: skip
        with pytest.raises(asyncpg.PostgresError, match="owner's login") as raised:
            await app_login.fetchval("SELECT chronicle_set_user_state($1, $2)", user, state)
        assert raised.value.sqlstate == "CR015"
    with pytest.raises(OwnerLoginNeededError, match="CHRONICLE_OWNER_DATABASE_URL"):
        await enable_user(store, "mallory")
    with pytest.raises(OwnerLoginNeededError):
        await remove_user(store, "root")
    assert await authenticate(store, mallorys_token, "api") is None
    admin = await authenticate(store, roots_token, "api")
    assert admin is not None and admin.is_admin


async def _promoted_while_open(
    owner_store: EventStore, app_login: asyncpg.Connection, name: str, statement: str, *args: object
) -> None:
    """The attacker's credential made in a transaction held open across the promotion, whose
    revocation cannot see an uncommitted row: the promotion must wait for it (the row's
    foreign key holds a lock on the user's row that chronicle_set_user_state's FOR UPDATE
    waits for), so that it revokes what the transaction made."""
    transaction = app_login.transaction()
    await transaction.start()
    await app_login.fetch(statement, *args)
    promotion = asyncio.ensure_future(promote_user(owner_store, name))
    await asyncio.sleep(0.5)
    assert not promotion.done()
    await transaction.commit()
    await asyncio.wait_for(promotion, 30)


async def test_a_token_made_in_a_transaction_open_across_the_promotion_is_revoked(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    await _promoted_while_open(
        owner_store,
        app_login,
        "bob",
        "SELECT * FROM chronicle_create_token(gen_random_uuid(), $1, 'api', 'x', $2, NULL)",
        bob.id,
        hashlib.sha256(PLANTED.encode()).digest(),
    )
    assert await authenticate(store, PLANTED, "api") is None


async def test_a_code_made_in_a_transaction_open_across_the_promotion_is_void(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    code = "chc_" + "C" * 43
    await _promoted_while_open(
        owner_store,
        app_login,
        "bob",
        "SELECT chronicle_create_login_code($1, NULL, gen_random_uuid(), $2, 5)",
        bob.id,
        hashlib.sha256(code.encode()).digest(),
    )
    assert await exchange_login_code(store, code, hours=1, address="") is None


async def test_a_login_made_in_a_transaction_open_across_the_promotion_is_ended(
    owner_store: EventStore, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    code, _ = await create_login_code(store, bob.id, minutes=5)
    cookie = "chl_" + "L" * 43
    await _promoted_while_open(
        owner_store,
        app_login,
        "bob",
        "SELECT * FROM chronicle_exchange_login_code($1, gen_random_uuid(), $2, 1, '')",
        hashlib.sha256(code.encode()).digest(),
        hashlib.sha256(cookie.encode()).digest(),
    )
    assert await authenticate_login(store, cookie) is None


async def _made_while_promoting(
    superuser: asyncpg.Connection,
    app_login: asyncpg.Connection,
    user_id: uuid.UUID,
    statement: str,
    *args: object,
) -> None:
    """The attacker's credential asked for while the owner's promotion is not committed yet:
    its check must not read the user as it was before the promotion."""
    transaction = superuser.transaction()
    await transaction.start()
    assert await superuser.fetchval("SELECT chronicle_set_user_state($1, 'admin')", user_id)
    made = asyncio.ensure_future(app_login.fetch(statement, *args))
    await asyncio.sleep(0.5)
    await transaction.commit()
    with contextlib.suppress(asyncpg.PostgresError):  # refused: the user is an admin now
        await asyncio.wait_for(made, 30)


async def test_a_token_asked_for_during_the_promotion_is_not_an_admins(
    superuser: asyncpg.Connection, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    await _made_while_promoting(
        superuser,
        app_login,
        bob.id,
        "SELECT * FROM chronicle_create_token(gen_random_uuid(), $1, 'api', 'x', $2, NULL)",
        bob.id,
        hashlib.sha256(PLANTED.encode()).digest(),
    )
    assert await authenticate(store, PLANTED, "api") is None


async def test_a_code_asked_for_during_the_promotion_signs_no_one_in(
    superuser: asyncpg.Connection, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    code = "chc_" + "D" * 43
    await _made_while_promoting(
        superuser,
        app_login,
        bob.id,
        "SELECT chronicle_create_login_code($1, NULL, gen_random_uuid(), $2, 5)",
        bob.id,
        hashlib.sha256(code.encode()).digest(),
    )
    assert await exchange_login_code(store, code, hours=1, address="") is None


async def test_a_login_exchanged_during_the_promotion_is_ended(
    superuser: asyncpg.Connection, store: EventStore, app_login: asyncpg.Connection
) -> None:
    bob = await add_user(store, "bob")
    code, _ = await create_login_code(store, bob.id, minutes=5)
    cookie = "chl_" + "M" * 43
    await _made_while_promoting(
        superuser,
        app_login,
        bob.id,
        "SELECT * FROM chronicle_exchange_login_code($1, gen_random_uuid(), $2, 1, '')",
        hashlib.sha256(code.encode()).digest(),
        hashlib.sha256(cookie.encode()).digest(),
    )
    assert await authenticate_login(store, cookie) is None
