"""Asking a worker to run an existing session again, within its owner's cap of working sessions.

A message or a resume to a session that ended asks for a run as surely as creating one does,
so it takes a place of the owner's cap (``session_owners.ACTIVE_SQL``) the same way: under the
owner's lock (the one ``reserve_session`` takes), counted, and taken in the same transaction
that asks for the run. The user's event is recorded while the lock is held, before the
request, so a worker never runs the session without it, and two requests at once never both
take the last place. A session that already counts (its run is requested or running) needs no
new place: a message to a working session is always taken.

The lock is held on a pooled connection while the event is appended (appends go out on
connections of their own), so requests that wait for it are queued in this process first,
one per owner, and no more of them hold pooled connections than leave one free.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from app.sessions.sql.session_leases import UnknownSessionError
from app.sessions.sql.session_owners import ACTIVE_SQL, COUNTS, RESERVE_LOCK_CLASS, owner_of
from app.store import Connection, ForeignKeyViolationError, Pool, StoreError

if TYPE_CHECKING:
    from app.store import EventStore

T = TypeVar("T")

SESSION_COUNTS_SQL = f"""
SELECT {COUNTS} FROM session_owners o
LEFT JOIN session_state s ON s.session_id = o.session_id
WHERE o.session_id = $1
"""


class RunCapReached(StoreError):
    """The session's owner has ``cap`` sessions working or waiting; nothing was recorded."""

    def __init__(self, session_id: UUID, active: int, cap: int) -> None:
        super().__init__(
            f"session {session_id} cannot run now: its owner has {active} sessions working "
            f"already (the most is {cap})"
        )
        self.session_id, self.active, self.cap = session_id, active, cap


async def request_run_within_cap(
    store: EventStore,
    session_id: UUID,
    *,
    cap: int,
    reason: str,
    record: Callable[[], Awaitable[T]],
) -> T:
    """``record()`` (append the user's event), then ask for the session's run, if the session
    already counts against its owner's cap or the owner has a place left; ``RunCapReached``
    (nothing recorded) if not. A session without an owner (recorded by the command line,
    seen by admins only) has no cap."""
    owner = await owner_of(store, session_id)
    if owner is None:
        recorded = await record()
        await _request(store.pool, session_id, reason)
        return recorded
    async with _turn(store, owner), store.pool.acquire() as connection:
        async with connection.transaction():
            await connection.execute(
                "SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))",
                RESERVE_LOCK_CLASS,
                str(owner),
            )
            if not await connection.fetchval(SESSION_COUNTS_SQL, session_id):
                active: int = await connection.fetchval(ACTIVE_SQL, owner)
                if active >= cap:
                    raise RunCapReached(session_id, active, cap)
            recorded = await record()
            await _request(connection, session_id, reason)
    return recorded


async def _request(connection: Connection | Pool, session_id: UUID, reason: str) -> None:
    try:
        await connection.fetchval("SELECT chronicle_request_run($1, $2)", session_id, reason)
    except ForeignKeyViolationError:
        raise UnknownSessionError(session_id) from None


#: Per process: one waiting request per owner, and at most half the pool holding the lock.
_owner_turns: weakref.WeakValueDictionary[UUID, asyncio.Lock] = weakref.WeakValueDictionary()
_pool_shares: weakref.WeakKeyDictionary[EventStore, asyncio.Semaphore] = weakref.WeakKeyDictionary()


@contextlib.asynccontextmanager
async def _turn(store: EventStore, owner: UUID) -> AsyncIterator[None]:
    turn = _owner_turns.get(owner)
    if turn is None:
        turn = _owner_turns[owner] = asyncio.Lock()
    share = _pool_shares.get(store)
    if share is None:
        share = _pool_shares[store] = asyncio.Semaphore(max(1, store.pool.get_max_size() // 2))
    async with turn, share:
        yield
