"""Which sessions must run and which worker runs each: lease rows in PostgreSQL.

A request puts a row in ``session_leases`` (idempotent: a waiting or running session is not
requested twice) and rings ``NOTIFY chronicle_runs``. A worker claims the oldest runnable row
(never claimed, or its lease expired) with ``FOR UPDATE SKIP LOCKED``, so concurrent workers
never wait on or take the same row; it extends the lease with heartbeats and releases it when
the run ends. Every claim draws a new ``lease_id``: a heartbeat or release naming an old one is
refused, which is how a worker that stalled past its lease learns that another took over.

No scheduler of our own: the table, its row locks and the clock of PostgreSQL are the engine
(migration 0009 has the functions; ``chronicle_app`` changes the rows only through them).
The lease says who should run a session; the session's claim (``session_claims``, an advisory
lock) still makes sure that only one process runs it at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Literal, NamedTuple
from uuid import UUID

from pydantic import BaseModel

from app.store import (
    TRANSIENT_ERRORS,
    Connection,
    DatabaseError,
    ForeignKeyViolationError,
    StoreError,
)

if TYPE_CHECKING:
    from app.store import EventStore

log = logging.getLogger(__name__)

#: Rung (payload: the session id) when a session must run or was handed back.
CHANNEL = "chronicle_runs"

RequestOutcome = Literal["requested", "waiting", "running"]
ReleaseOutcome = Literal["ended", "handed_back"]
ReleaseResult = Literal["released", "requeued", "not_held"]


class Lease(BaseModel):
    """A worker's hold on one session's run."""

    session_id: UUID
    lease_id: UUID
    #: claims since the last clean release (1: nobody died running it)
    attempts: int
    reason: str
    requested_at: datetime
    #: the worker whose lease expired and was taken over (None: the row was waiting)
    taken_over_from: str | None


class WorkerPresence(BaseModel):
    """A worker process as its heartbeat last described it."""

    worker_id: str
    host: str
    pid: int
    role: str
    started_at: datetime
    last_seen_at: datetime
    running: int
    capacity: int


class UnknownSessionError(StoreError):
    """A run was requested for a session that has no events."""

    def __init__(self, session_id: UUID) -> None:
        super().__init__(f"session {session_id} does not exist; create it before running it")
        self.session_id = session_id


async def request_run(store: EventStore, session_id: UUID, reason: str) -> RequestOutcome:
    """Ask for the session to run: ``requested`` (a worker will take it), ``waiting`` (it was
    already requested) or ``running`` (a worker runs it; it runs again if its run ends first)."""
    try:
        outcome = await store.pool.fetchval(
            "SELECT chronicle_request_run($1, $2)", session_id, reason
        )
    except ForeignKeyViolationError:
        raise UnknownSessionError(session_id) from None
    return outcome  # type: ignore[no-any-return]


async def claim_next(store: EventStore, worker_id: str, lease_seconds: float) -> Lease | None:
    """The oldest session that must run and nobody holds (or whose holder's lease expired),
    now leased to ``worker_id`` for ``lease_seconds``; None if there is none."""
    row = await store.pool.fetchrow(
        "SELECT * FROM chronicle_claim_run($1, $2)", worker_id, lease_seconds
    )
    return Lease.model_validate(dict(row)) if row is not None else None


async def heartbeat(store: EventStore, lease: Lease, lease_seconds: float) -> bool:
    """Extend the lease to ``lease_seconds`` from now; False if it is no longer ours (it
    expired and another worker took it over: stop running the session)."""
    held = await store.pool.fetchval(
        "SELECT chronicle_heartbeat_run($1, $2, $3)",
        lease.session_id,
        lease.lease_id,
        lease_seconds,
    )
    return bool(held)


async def release(
    store: EventStore, lease: Lease, outcome: ReleaseOutcome, *, retry_after: float = 0.0
) -> ReleaseResult:
    """Give the lease up. ``ended``: the agent finished, awaits the user or failed; the row is
    removed unless the session was requested again meanwhile. ``handed_back``: another worker
    should run it, from ``retry_after`` seconds on (workers are woken)."""
    result = await store.pool.fetchval(
        "SELECT chronicle_release_run($1, $2, $3, $4)",
        lease.session_id,
        lease.lease_id,
        outcome,
        retry_after,
    )
    return result  # type: ignore[no-any-return]


class LeaseOutlook(NamedTuple):
    """What a worker with nothing to claim learns in one query: when to look again, and
    whether a session it may have to take over is running on another worker."""

    #: Seconds until the next held lease expires or a handed-back row becomes claimable (0:
    #: something is claimable now); None when nothing waits for a time.
    seconds_until_due: float | None
    held_elsewhere: bool


async def lease_outlook(store: EventStore, *, worker_id: str | None) -> LeaseOutlook:
    """When to look again, and whether a worker other than ``worker_id`` holds a lease."""
    row = await store.pool.fetchrow(
        "SELECT extract(epoch FROM min(coalesce(lease_expires_at, now())) - now()) AS due, "
        "coalesce(bool_or(owner IS NOT NULL AND owner IS DISTINCT FROM $1), false) AS elsewhere "
        "FROM session_leases",
        worker_id,
    )
    seconds = None if row is None or row["due"] is None else max(float(row["due"]), 0.0)
    return LeaseOutlook(seconds, bool(row and row["elsewhere"]))


async def worker_seen(
    store: EventStore,
    *,
    worker_id: str,
    host: str,
    pid: int,
    role: str,
    running: int,
    capacity: int,
    forget_after: float,
) -> None:
    """Say this worker is present (and forget workers unseen for ``forget_after`` s)."""
    await store.pool.execute(
        "SELECT chronicle_worker_seen($1, $2, $3, $4, $5, $6, $7)",
        worker_id,
        host,
        pid,
        role,
        running,
        capacity,
        forget_after,
    )


async def worker_gone(store: EventStore, worker_id: str) -> None:
    await store.pool.execute("SELECT chronicle_worker_gone($1)", worker_id)


async def present_workers(store: EventStore, *, seen_within: float) -> list[WorkerPresence]:
    """Workers whose heartbeat was seen in the last ``seen_within`` seconds (for readiness)."""
    rows = await store.pool.fetch(
        "SELECT worker_id, host, pid, role, started_at, last_seen_at, running, capacity "
        "FROM workers WHERE last_seen_at > now() - make_interval(secs => $1) "
        "ORDER BY started_at",
        seen_within,
    )
    return [WorkerPresence.model_validate(dict(row)) for row in rows]


class RunRequests:
    """The doorbell of ``chronicle_runs`` on a connection of its own: ``wait`` returns when a
    run was requested or handed back, or after ``seconds`` (the caller polls then; a lost
    connection is opened again at the next wait, and notifications sent meanwhile are lost,
    which the poll covers)."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._connection: Connection | None = None
        self._rung = asyncio.Event()

    def _on_notification(self, _conn: object, _pid: int, _channel: str, _payload: str) -> None:
        self._rung.set()

    async def _listening(self) -> None:
        if self._connection is not None and not self._connection.is_closed():
            return
        await self._drop()
        try:
            connection = await self._store.connect()
            await connection.add_listener(CHANNEL, self._on_notification)
        except (*TRANSIENT_ERRORS, StoreError, DatabaseError) as exc:
            log.info("cannot listen for run requests (polling meanwhile): %s", exc)
            return
        self._connection = connection
        self._rung.set()  # requests may have come while nobody listened: look now

    async def wait(self, seconds: float) -> bool:
        """True if rung, False if ``seconds`` passed first."""
        await self._listening()
        try:
            async with asyncio.timeout(seconds):
                await self._rung.wait()
        except TimeoutError:
            return False
        finally:
            self._rung.clear()
        return True

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(*TRANSIENT_ERRORS, DatabaseError):
                await asyncio.wait_for(connection.close(), 5)

    async def close(self) -> None:
        await self._drop()


@contextlib.asynccontextmanager
async def run_requests(store: EventStore) -> AsyncIterator[RunRequests]:
    requests = RunRequests(store)
    try:
        yield requests
    finally:
        await requests.close()
