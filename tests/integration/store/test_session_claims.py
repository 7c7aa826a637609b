"""A session's claim: one process at a time, visible to readers, gone with its connection."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from app.config import Settings
from app.events import AgentState, SessionCreated
from app.sessions.summary import recent_sessions
from app.store import EventStore, StoreError
from app.store.session_claims import KEEPALIVE_SQL, SessionBusyError, claim_session


def never_lost() -> None:
    raise AssertionError("the claim's connection was not lost")


async def test_one_claim_at_a_time_and_readers_see_it(
    store: EventStore, app_database_url: str, settings: Settings
) -> None:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="t"), AgentState(state="running")])
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=settings.masker()
    ) as other:
        async with claim_session(store, session, on_lost=never_lost):
            [listed] = await recent_sessions(other)
            assert listed.state == "running"
            with pytest.raises(SessionBusyError, match="is running in another process"):
                async with claim_session(other, session, on_lost=never_lost):
                    pass
            async with claim_session(other, uuid.uuid4(), on_lost=never_lost):
                pass  # another session's claim is its own
        [listed] = await recent_sessions(other)
        assert listed.state == "interrupted"  # working, and nobody runs it
        async with claim_session(other, session, on_lost=never_lost):
            pass  # released: the next process may run it


async def test_a_lost_connection_is_reported(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    lost = asyncio.Event()
    session = uuid.uuid4()
    async with claim_session(store, session, on_lost=lost.set):
        await superuser.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND classid = 1130 AND objid = hashtext($1::text)::oid AND granted",
            str(session),
        )
        async with asyncio.timeout(10):
            await lost.wait()


async def test_a_pool_of_one_connection_cannot_run_a_session(
    app_database_url: str, settings: Settings
) -> None:
    single = settings.model_copy(update={"pool_max_size": 1})
    async with await EventStore.open(
        app_database_url, config=single.store, masker=single.masker()
    ) as store:
        with pytest.raises(StoreError, match="pool_max_size of 2 or more"):
            async with claim_session(store, uuid.uuid4(), on_lost=never_lost):
                pass


async def test_the_claim_connection_asks_the_server_to_notice_a_vanished_host(
    app_database_url: str,
) -> None:
    """The application role may set the keepalives (they are user settings) and, over TCP, the
    server then probes a silent claimant after 10 s instead of the kernel's two hours."""
    connection = await asyncpg.connect(app_database_url)
    try:
        await connection.execute(KEEPALIVE_SQL)
        over_tcp = await connection.fetchval("SELECT inet_server_addr() IS NOT NULL")
        idle = await connection.fetchval("SHOW tcp_keepalives_idle")
        assert idle == ("10s" if over_tcp else "0"), idle
    finally:
        await connection.close()
