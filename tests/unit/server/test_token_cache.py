"""The Bearer token cache: a live token is looked up once per ``ttl``, a dead one every time,
and nothing outlives its bound (revocation elsewhere, the token's own expiry); a credential
change heard, or a watch not listening, means nothing remembered is trusted."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from app.server.token_cache import TokenCache
from app.sessions.sql.users import Principal, new_token, token_hash


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Watch:
    """A stand-in for ``CredentialWatch``: listening, and a generation a test moves on."""

    def __init__(self) -> None:
        self.live = True
        self.generation = 0


class Directory:
    """What the database says of tokens, counting the lookups."""

    def __init__(self) -> None:
        self.live: dict[str, Principal] = {}
        self.lookups = 0

    async def look_up(self, token: str) -> Principal | None:
        self.lookups += 1
        return self.live.get(token)


def principal(expires_at: datetime | None = None) -> Principal:
    return Principal(
        user_id=uuid.uuid4(),
        name="ann",
        is_admin=False,
        token_id=uuid.uuid4(),
        token_kind="api",
        expires_at=expires_at,
    )


async def test_a_live_token_is_looked_up_once_per_ttl() -> None:
    clock, directory = Clock(), Directory()
    cache = TokenCache(5.0, Watch(), clock=clock)
    token = new_token()
    directory.live[token] = principal()
    for _ in range(10):
        assert await cache.principal(token, directory.look_up) == directory.live[token]
    assert directory.lookups == 1
    clock.now += 5.0
    assert await cache.principal(token, directory.look_up) is not None
    assert directory.lookups == 2


async def test_a_revoked_token_is_refused_once_the_ttl_has_passed() -> None:
    clock, directory = Clock(), Directory()
    cache = TokenCache(5.0, Watch(), clock=clock)
    token = new_token()
    directory.live[token] = principal()
    assert await cache.principal(token, directory.look_up) is not None
    del directory.live[token]  # revoked by another process
    clock.now += 4.9
    assert await cache.principal(token, directory.look_up) is not None  # within the bound
    clock.now += 0.1
    assert await cache.principal(token, directory.look_up) is None
    assert await cache.principal(token, directory.look_up) is None
    assert directory.lookups == 3  # a refused token is asked for every time, never kept


async def test_forget_drops_a_token_at_once() -> None:
    clock, directory = Clock(), Directory()
    cache = TokenCache(5.0, Watch(), clock=clock)
    token = new_token()
    directory.live[token] = principal()
    await cache.principal(token, directory.look_up)
    del directory.live[token]
    cache.forget(token)
    assert await cache.principal(token, directory.look_up) is None


async def test_a_token_past_its_own_expiry_is_not_served_from_the_cache() -> None:
    clock, directory = Clock(), Directory()
    cache = TokenCache(60.0, Watch(), clock=clock)
    token = new_token()
    expiring = principal(expires_at=datetime.now(UTC) + timedelta(milliseconds=1))
    directory.live[token] = expiring
    assert await cache.principal(token, directory.look_up) is not None
    while datetime.now(UTC) <= expiring.expires_at:  # type: ignore[operator]
        pass
    del directory.live[token]  # the database's lookup refuses it from now on
    assert await cache.principal(token, directory.look_up) is None


async def test_a_zero_ttl_keeps_nothing() -> None:
    directory = Directory()
    cache = TokenCache(0.0, Watch(), clock=Clock())
    token = new_token()
    directory.live[token] = principal()
    for _ in range(3):
        assert await cache.principal(token, directory.look_up) is not None
    assert directory.lookups == 3 and len(cache) == 0


async def test_the_cache_is_bounded_and_keeps_hashes_not_tokens() -> None:
    clock, directory = Clock(), Directory()
    cache = TokenCache(5.0, Watch(), max_entries=3, clock=clock)
    tokens = [new_token() for _ in range(5)]
    for token in tokens:
        directory.live[token] = principal()
        await cache.principal(token, directory.look_up)
    assert len(cache) == 3
    keys = set(cache._entries)
    assert keys == {token_hash(token) for token in tokens[2:]}  # the oldest went first
    assert not any(token.encode() in key for token in tokens for key in keys)


async def test_a_change_heard_anywhere_drops_every_remembered_token() -> None:
    clock, directory, watch = Clock(), Directory(), Watch()
    cache = TokenCache(60.0, watch, clock=clock)
    token = new_token()
    directory.live[token] = principal()
    await cache.principal(token, directory.look_up)
    await cache.principal(token, directory.look_up)
    assert directory.lookups == 1
    del directory.live[token]  # revoked by another process, which notified
    watch.generation += 1
    assert await cache.principal(token, directory.look_up) is None


async def test_nothing_is_remembered_while_the_watch_is_not_listening() -> None:
    clock, directory, watch = Clock(), Directory(), Watch()
    watch.live = False
    cache = TokenCache(60.0, watch, clock=clock)
    token = new_token()
    directory.live[token] = principal()
    for _ in range(3):
        assert await cache.principal(token, directory.look_up) is not None
    assert directory.lookups == 3 and len(cache) == 0


async def test_a_lookup_that_races_a_change_is_not_remembered() -> None:
    clock, directory, watch = Clock(), Directory(), Watch()
    cache = TokenCache(60.0, watch, clock=clock)
    token = new_token()
    directory.live[token] = principal()

    async def look_up_while_revoked(token: str) -> Principal | None:
        found = await directory.look_up(token)
        watch.generation += 1  # the revocation's notification arrives during the lookup
        return found

    assert await cache.principal(token, look_up_while_revoked) is not None
    assert len(cache) == 0
