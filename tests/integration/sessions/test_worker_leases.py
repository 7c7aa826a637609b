"""A worker's hold on its leases against real PostgreSQL, without running an agent: a renewal
refused after a takeover stops the run, and a session whose workers keep dying is given up."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from app.config import Settings
from app.events import SessionCreated
from app.sessions.sql import session_leases as leases
from app.sessions.step_gate import StepGate
from app.sessions.worker import Worker, WorkerRun
from app.store import EventStore


async def requested_session(store: EventStore) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="t")])
    await leases.request_run(store, session, "message")
    return session


def quick(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"worker_lease_duration": 1.0, "worker_heartbeat_interval": 0.2}
    )


async def test_a_run_whose_lease_was_taken_over_is_stopped(
    store: EventStore, settings: Settings, superuser: asyncpg.Connection
) -> None:
    session = await requested_session(store)
    worker = Worker(store, quick(settings), "stalled", max_sessions=1)
    lease = await leases.claim_next(store, "stalled", 1.0)
    assert lease is not None
    running = asyncio.create_task(asyncio.sleep(3600))  # stands in for the session's run
    run = WorkerRun(lease, running, StepGate(asyncio.Event()))
    keeper = asyncio.create_task(worker.keep_lease(run))
    await asyncio.sleep(0.5)
    assert not running.done()  # renewed: still ours
    # The worker stalled past its lease and another took the session over.
    await superuser.execute(
        "UPDATE session_leases SET lease_expires_at = now() - interval '1 second'"
    )
    assert await leases.claim_next(store, "other", 30) is not None
    async with asyncio.timeout(5):
        await keeper
    await asyncio.wait({running}, timeout=5)
    assert running.cancelled() and run.cancelled_because == "lease_lost"
    row = await store.pool.fetchrow(
        "SELECT owner FROM session_leases WHERE session_id = $1", session
    )
    assert row is not None and row["owner"] == "other"  # the stalled worker left it alone


async def test_a_session_whose_workers_keep_dying_is_given_up(
    store: EventStore, settings: Settings, superuser: asyncpg.Connection
) -> None:
    session = await requested_session(store)
    settings = quick(settings).model_copy(update={"worker_max_attempts": 2})
    lease = None
    for _ in range(3):  # three claims, each worker dying with it
        await superuser.execute("UPDATE session_leases SET lease_expires_at = now()")
        lease = await leases.claim_next(store, "w", 30)
    assert lease is not None and lease.attempts == 3
    await Worker(store, settings, "w", max_sessions=1).serve_lease(lease)
    [error] = [e for e in await store.read(session) if e.kind == "agent.state"]
    assert (
        error.payload["state"] == "error" and "given up after 2 workers" in error.payload["reason"]
    )
    assert await store.pool.fetchval("SELECT count(*) FROM session_leases") == 0
