"""A trial whose claim a process took and never recorded (kill -9 while its workspace was
prepared) is recorded by the next sweep once the claim is older than a lease, and by one
process only (real PostgreSQL).

Before, ``_start_next`` skipped every ``taken`` claim: such a trial was never recorded, so
its run stayed ``running`` for ever (the second ``continue_run`` below recorded nothing)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.config import Settings
from app.evaluation.api_runs import (
    RunExistsError,
    RunPlan,
    continue_run,
    start_run,
)
from app.sessions.sql.users import add_user
from app.store import EventStore, claim_session
from tests.support.trial_runs import claimed_trial

LEASE = 1.0


def quick_settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"worker_lease_duration": LEASE, "worker_heartbeat_interval": LEASE / 4}
    )


async def abandoned_claim(store: EventStore) -> tuple[RunPlan, uuid.UUID]:
    """A run of one trial whose claim was taken by a process that then died."""
    return await claimed_trial(store, "stranded")


async def kinds(store: EventStore, session: uuid.UUID) -> list[str]:
    return [event.kind for event in await store.read(session)]


async def test_a_claim_younger_than_a_lease_is_left_to_its_process(
    store: EventStore, settings: Settings
) -> None:
    plan, session = await abandoned_claim(store)
    assert await continue_run(store, quick_settings(settings), plan) == 0
    assert await kinds(store, session) == []


async def test_an_abandoned_claim_is_recorded_by_the_sweep(
    store: EventStore, settings: Settings
) -> None:
    plan, session = await abandoned_claim(store)
    await asyncio.sleep(LEASE + 0.3)
    assert await continue_run(store, quick_settings(settings), plan) == 1
    recorded = await kinds(store, session)
    assert recorded[:2] == ["session.created", "message"], recorded
    assert await continue_run(store, quick_settings(settings), plan) == 0
    assert (await kinds(store, session))[:2] == ["session.created", "message"]


async def test_a_claim_whose_process_is_still_recording_is_not_taken_over(
    store: EventStore, settings: Settings
) -> None:
    plan, session = await abandoned_claim(store)
    await asyncio.sleep(LEASE + 0.3)
    async with claim_session(store, session, on_lost=lambda: None):
        assert await continue_run(store, quick_settings(settings), plan) == 0
        assert await kinds(store, session) == []
    assert await continue_run(store, quick_settings(settings), plan) == 1


async def test_two_sweeps_at_once_record_the_trial_once(
    store: EventStore, settings: Settings
) -> None:
    plan, session = await abandoned_claim(store)
    await asyncio.sleep(LEASE + 0.3)
    fast = quick_settings(settings)
    started = await asyncio.gather(continue_run(store, fast, plan), continue_run(store, fast, plan))
    assert sorted(started) == [0, 1]
    recorded = await kinds(store, session)
    assert recorded.count("session.created") == 1 and recorded.count("message") == 1, recorded


# -- a run's name taken by a request whose process died --------------------------------------


async def test_a_name_whose_first_trial_was_abandoned_is_free_again_for_its_owner(
    store: EventStore, settings: Settings
) -> None:
    """The first trial's claim is how a run's name is taken: a request that died right after
    it left the name taken for ever (every later ``start_run`` was refused)."""
    plan, session = await abandoned_claim(store)  # the first trial of a one-trial run
    fast = quick_settings(settings)
    with pytest.raises(RunExistsError):  # younger than a lease: its request may still record it
        await start_run(store, fast, plan)
    await asyncio.sleep(LEASE + 0.3)
    other = await add_user(store, f"eve-{uuid.uuid4().hex[:8]}")
    with pytest.raises(RunExistsError):  # the name is not another user's to take over
        await start_run(store, fast, plan.model_copy(update={"owner": other.id}))
    run = await start_run(store, fast, plan)
    assert run.name == plan.name
    assert (await kinds(store, session))[:2] == ["session.created", "message"]
    with pytest.raises(RunExistsError):
        await start_run(store, fast, plan)
