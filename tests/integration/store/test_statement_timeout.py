"""A runaway statement on the application's login ends: the role starts every session with a
statement timeout (migration 0017), Chronicle's own connections set theirs, and the commands
that legitimately run long set none.

Before, chronicle_app had no timeout: a query over its login ran for ever."""

from __future__ import annotations

import asyncpg
import pytest

from app.events.masking import SecretMasker
from app.store import EventStore
from app.store.config import StoreConfig


@pytest.mark.usefixtures("role_settings_read")
async def test_the_app_role_has_a_default_and_the_store_sets_its_own(app_database_url: str) -> None:
    # Any login as chronicle_app (a tool, an attacker's query) starts with the role's bound.
    raw = await asyncpg.connect(app_database_url)
    try:
        assert await raw.fetchval("SHOW statement_timeout") == "5min"
    finally:
        await raw.close()
    config = StoreConfig(statement_timeout=0.5)
    async with await EventStore.open(
        app_database_url, config=config, masker=SecretMasker()
    ) as store:
        assert await store.pool.fetchval("SHOW statement_timeout") == "500ms"
        with pytest.raises(asyncpg.QueryCanceledError, match="statement timeout"):
            await store.pool.fetchval("SELECT pg_sleep(3)")
        own = await store.connect()  # a projection runner's connection: the same bound
        try:
            assert await own.fetchval("SHOW statement_timeout") == "500ms"
        finally:
            await own.close()
    unbounded = StoreConfig(statement_timeout=0)  # archive, import, verify, rebuild
    async with await EventStore.open(
        app_database_url, config=unbounded, masker=SecretMasker()
    ) as store:
        assert await store.pool.fetchval("SHOW statement_timeout") == "0"
