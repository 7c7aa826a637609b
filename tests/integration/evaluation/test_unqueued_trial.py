"""A trial recorded by a process that died before it asked a worker to run it is queued by the
sweep once its last event is older than a lease, by the database's clock, and not before
(real PostgreSQL)."""

from __future__ import annotations

import asyncio
import uuid

from app.config import Settings
from app.evaluation.api_runs import RunPlan, _record_trial
from app.evaluation.run_recovery import recover_run
from app.evaluation.sql.evaluation_runs import database_now
from app.events import SessionCreated
from app.sessions.sql.session_leases import request_run
from app.store import EventStore
from tests.support.trial_runs import TASK, claimed_trial

LEASE = 1.0


async def recorded_unqueued(store: EventStore, settings: Settings) -> tuple[RunPlan, uuid.UUID]:
    """A run of one trial, recorded (its claim, ``session.created``, the task's message) by a
    process that died before ``request_run``."""
    plan, session = await claimed_trial(store, "unqueued")
    assert await _record_trial(store, settings, plan, TASK, 1, session) is None
    return plan, session


def quick(settings: Settings) -> Settings:
    return settings.model_copy(update={"worker_lease_duration": LEASE})


async def test_a_trial_recorded_just_now_is_left_to_its_process(
    store: EventStore, settings: Settings
) -> None:
    plan, session = await recorded_unqueued(store, settings)
    await recover_run(store, quick(settings), plan, [session])
    # "requested": nobody had asked for the run yet (the sweep did not queue it)
    assert await request_run(store, session, "test") == "requested"


async def test_a_trial_recorded_and_never_queued_is_queued_by_the_sweep(
    store: EventStore, settings: Settings
) -> None:
    plan, session = await recorded_unqueued(store, settings)
    await asyncio.sleep(LEASE + 0.3)
    await recover_run(store, quick(settings), plan, [session])
    # "waiting": the sweep asked for the run already
    assert await request_run(store, session, "test") == "waiting"


async def test_the_database_clock_is_the_events_clock(store: EventStore) -> None:
    before = await database_now(store)
    session = uuid.uuid4()
    [created] = await store.append(session, [SessionCreated(title="clock")])
    assert before <= created.created_at <= await database_now(store)
