"""A worker's decisions that need no database: how a run's end releases its lease, how long
to sleep between claims, its settings, and how long a drain waits for the runs."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import cast

import pytest

from app.config import Settings
from app.sessions.sql.session_leases import Lease
from app.sessions.step_gate import StepGate
from app.sessions.worker import (
    Worker,
    WorkerRun,
    gave_up_reason,
    new_worker_id,
    refused_backoff,
    release_plan,
    wait_before_claiming,
)
from app.store import EventStore


def test_release_plan() -> None:
    assert release_plan("ended", busy_retry_after=5) == ("ended", 0.0)
    assert release_plan("failed", busy_retry_after=5) == ("ended", 0.0)
    # Drained (SIGTERM): another worker takes it at once; busy (a CLI runs it): later.
    assert release_plan("drained", busy_retry_after=5) == ("handed_back", 0.0)
    assert release_plan("busy", busy_retry_after=5) == ("handed_back", 5)


def test_wait_before_claiming() -> None:
    assert wait_before_claiming(2.0, None) == 2.0
    assert wait_before_claiming(2.0, 30.0) == 2.0
    assert wait_before_claiming(2.0, 0.4) == 0.4  # a lease falls due before the next poll
    assert wait_before_claiming(2.0, 0.0) == 0.05  # never a busy loop


def test_worker_ids_are_unique_per_call() -> None:
    assert new_worker_id() != new_worker_id()
    assert "/" in new_worker_id()


def test_gave_up_reason_counts_the_workers_that_died() -> None:
    assert "after 3 workers" in gave_up_reason(4)


def test_heartbeat_must_be_shorter_than_the_lease() -> None:
    with pytest.raises(ValueError, match="worker_heartbeat_interval"):
        Settings(worker_lease_duration=5, worker_heartbeat_interval=5)
    Settings(worker_lease_duration=5, worker_heartbeat_interval=1)


def running(worker: Worker, seconds: float) -> WorkerRun:
    """A run of ``seconds`` registered with ``worker`` as its claim loop would."""
    lease = Lease(
        session_id=uuid.uuid4(),
        lease_id=uuid.uuid4(),
        attempts=1,
        reason="message",
        requested_at=datetime.now(UTC),
        taken_over_from=None,
    )
    run = WorkerRun(lease, asyncio.create_task(asyncio.sleep(seconds)), StepGate(asyncio.Event()))
    worker.runs[lease.session_id] = run
    worker._serving.add(asyncio.create_task(asyncio.wait({run.task})))
    return run


async def test_a_drain_waits_for_steps_that_end_in_time() -> None:
    worker = Worker(cast(EventStore, None), Settings(worker_drain_timeout=5), "w", 2)
    run = running(worker, 0.2)
    await worker.finish_runs(asyncio.Event())
    assert run.task.done() and not run.task.cancelled() and run.cancelled_because is None


async def test_a_drain_that_outlasts_its_timeout_stops_the_runs() -> None:
    worker = Worker(cast(EventStore, None), Settings(worker_drain_timeout=0.3), "w", 2)
    run = running(worker, 3600)
    started = time.monotonic()
    await worker.finish_runs(asyncio.Event())
    assert run.task.cancelled() and run.cancelled_because == "drained"
    assert time.monotonic() - started < 3


async def test_abort_stops_the_runs_at_once() -> None:
    worker = Worker(cast(EventStore, None), Settings(worker_drain_timeout=3600), "w", 2)
    run = running(worker, 3600)
    abort = asyncio.Event()
    asyncio.get_running_loop().call_later(0.1, abort.set)
    async with asyncio.timeout(5):
        await worker.finish_runs(abort)
    assert run.task.cancelled() and run.cancelled_because == "drained"


def test_a_run_refused_for_now_is_handed_back_with_a_growing_wait() -> None:
    # a full disk: the run keeps its request, claimable again after the backoff
    assert release_plan("refused", busy_retry_after=5, refused_retry_after=0.8) == (
        "handed_back",
        0.8,
    )
    waits = [refused_backoff(n, 0.5, 3.0) for n in range(1, 7)]
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    assert refused_backoff(10_000, 0.5, 60.0) == 60.0  # no overflow after days of refusals
