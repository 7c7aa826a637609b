"""Which sessions a process is running right now: a PostgreSQL advisory lock per session.

A process that runs a session (``chronicle run`` / ``resume``) holds the session-level advisory
lock ``(CLAIM_CLASS, hashtext(session id))`` on a connection of its own for as long as it
runs it. PostgreSQL drops the lock the moment that connection ends, however the process ended
(kill -9, a crash, a lost network: see ``KEEPALIVE_SQL``), so a reader tells a running session
from one whose process died without a heartbeat to tune or a stale row to clean up: a session
whose last agent state says it is working while nobody holds its lock was interrupted. The
lock also keeps a second process from running the same session at the same time.

Appends take ``(1129, hashtext(session id))`` per transaction; this is another key space.
Two sessions whose ids hash alike (one chance in 2^32 per pair) would share a claim: the
second would be refused as running until the first ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING
from uuid import UUID

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from app.store.errors import StoreError
from app.store.transient import TRANSIENT_ERRORS

if TYPE_CHECKING:
    from app.store.event_store import EventStore

log = logging.getLogger(__name__)

CLAIM_CLASS = 1130
#: How often the claim's connection is checked: a database that went away is noticed by then.
CHECK_EVERY = 1.0
CHECK_TIMEOUT = 5.0

TRY_CLAIM_SQL = "SELECT pg_try_advisory_lock($1::int, hashtext($2::text))"
#: The server notices a claimant whose host vanished (power cut, lost network: no FIN, no RST)
#: after ~25 s of silence instead of the kernel's default of about two hours, and drops the
#: claim with the connection. Ignored on a Unix socket, where a dead peer is seen at once.
KEEPALIVE_SQL = (
    "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; "
    "SET tcp_keepalives_count = 3; SET tcp_user_timeout = 25000"
)
RELEASE_SQL = "SELECT pg_advisory_unlock($1::int, hashtext($2::text))"


def claimed_sql(session_column: str) -> str:
    """An SQL condition: some process holds the claim on the session in ``session_column``
    (pg_locks lists a two-key advisory lock as classid, objid with objsubid 2)."""
    return f"""EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = {CLAIM_CLASS} AND l.objid = hashtext({session_column}::text)::oid
    )"""


class SessionBusyError(StoreError):
    """Another process is running this session."""

    def __init__(self, session_id: UUID) -> None:
        super().__init__(
            f"session {session_id} is running in another process; wait until it ends, or stop "
            f"it (Ctrl-C in its terminal), then `chronicle resume {session_id}`"
        )
        self.session_id = session_id


@contextlib.asynccontextmanager
async def claim_session(
    store: EventStore, session_id: UUID, *, on_lost: Callable[[], None]
) -> AsyncIterator[None]:
    """Hold the session's claim for the block; raise ``SessionBusyError`` if another process
    holds it. ``on_lost()`` is called once if the claim's connection dies (the database went
    away): the claim is gone then, and the caller must stop running the session."""
    if store.pool.get_max_size() < 2:
        raise StoreError(
            "running a session needs pool_max_size of 2 or more: one connection holds the "
            "session's claim for the whole run"
        )
    connection = await store.pool.acquire()
    try:
        await connection.execute(KEEPALIVE_SQL)
        if not await connection.fetchval(TRY_CLAIM_SQL, CLAIM_CLASS, str(session_id)):
            raise SessionBusyError(session_id)
        watcher = asyncio.create_task(_watch(connection, on_lost), name="chronicle-claim")
        try:
            yield
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await _release(connection, session_id)
    finally:
        await store.pool.release(connection)


async def _watch(connection: PoolConnectionProxy, on_lost: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(CHECK_EVERY)
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                await connection.fetchval("SELECT 1")
        except (*TRANSIENT_ERRORS, asyncpg.PostgresError, asyncpg.InternalClientError) as exc:
            log.info("the session's claim was lost: %s", exc)
            on_lost()
            return


async def _release(connection: PoolConnectionProxy, session_id: UUID) -> None:
    """Unlock before the connection goes back to the pool (which keeps session state); a
    connection that cannot unlock is closed, which drops the lock with it."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            await connection.fetchval(RELEASE_SQL, CLAIM_CLASS, str(session_id))
    except (*TRANSIENT_ERRORS, asyncpg.PostgresError, asyncpg.InternalClientError):
        with contextlib.suppress(asyncpg.InterfaceError):  # the pool took it back already
            connection.terminate()
