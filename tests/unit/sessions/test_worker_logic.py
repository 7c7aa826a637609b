"""A worker's decisions that need no database: how a run's end releases its lease, how long
to sleep between claims, its settings."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.sessions.worker import gave_up_reason, new_worker_id, release_plan, wait_before_claiming


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
