"""Which standby a read goes to, and when its answer is whole: pure logic of
app/store/read_replicas.py (the reads themselves: tests/system/store/test_read_replicas.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast

from app.store.read_replicas import (
    ReadReplicas,
    Replica,
    global_read_whole,
    sessions_behind,
)
from app.store.records import RecordedEvent

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


def event(session: uuid.UUID, seq: int) -> RecordedEvent:
    return RecordedEvent(
        seq, session, seq, uuid.uuid4(), 1, "message", "user", None, {}, 1,
        datetime.now(UTC), b"",
    )  # fmt: skip


def events(session: uuid.UUID, seqs: range) -> list[RecordedEvent]:
    return [event(session, seq) for seq in seqs]


def test_an_answer_that_reaches_the_primary_head_is_whole() -> None:
    assert sessions_behind({A: 0}, {A: 5}, events(A, range(1, 6)), None) == set()
    assert sessions_behind({A: 3}, {A: 5}, events(A, range(4, 6)), None) == set()
    # the standby may be further than the head taken before the read: still whole
    assert sessions_behind({A: 0}, {A: 5}, events(A, range(1, 8)), None) == set()


def test_an_answer_short_of_the_head_is_behind() -> None:
    assert sessions_behind({A: 0}, {A: 5}, events(A, range(1, 4)), None) == {A}
    assert sessions_behind({A: 0}, {A: 5}, [], None) == {A}
    # a pooled read: only the short session goes to the primary
    tails = events(A, range(1, 3)) + events(B, range(3, 4))
    assert sessions_behind({A: 0, B: 2}, {A: 2, B: 4}, tails, None) == {B}


def test_a_full_page_is_whole_even_short_of_the_head() -> None:
    assert sessions_behind({A: 0}, {A: 5000}, events(A, range(1, 1001)), 1000) == set()
    assert sessions_behind({A: 0}, {A: 5000}, events(A, range(1, 1000)), 1000) == {A}
    assert sessions_behind({A: 10}, {A: 12}, events(A, range(11, 13)), 1000) == set()


def test_a_session_the_primary_has_no_head_for_has_nothing_to_miss() -> None:
    assert sessions_behind({A: 0}, {}, [], 100) == set()
    assert sessions_behind({A: 7}, {A: 7}, [], 100) == set()


def test_the_global_read_is_whole_at_the_primary_horizon_or_a_full_page() -> None:
    assert global_read_whole(primary_horizon=100, replica_horizon=100, rows=0, limit=10)
    assert global_read_whole(primary_horizon=100, replica_horizon=130, rows=3, limit=10)
    assert not global_read_whole(primary_horizon=100, replica_horizon=99, rows=9, limit=10)
    assert global_read_whole(primary_horizon=100, replica_horizon=50, rows=10, limit=10)


def _replicas(*names: str, clock: Any) -> ReadReplicas:
    pools = [Replica(name, cast(Any, None)) for name in names]
    return ReadReplicas(pools, cooldown=5.0, clock=clock)


def test_standbys_are_taken_in_turn_and_one_that_failed_rests() -> None:
    now = [0.0]
    replicas = _replicas("one", "two", clock=lambda: now[0])
    assert [replicas.choose().name for _ in range(4)] == ["one", "two", "one", "two"]  # type: ignore[union-attr]
    two = next(r for r in [replicas.choose(), replicas.choose()] if r and r.name == "two")
    replicas.failed(two)
    assert replicas.stats.failed == 1
    assert {replicas.choose().name for _ in range(3)} == {"one"}  # type: ignore[union-attr]
    now[0] = 5.0  # rested
    assert {replicas.choose().name for _ in range(2)} == {"one", "two"}  # type: ignore[union-attr]


def test_with_every_standby_resting_or_none_set_the_primary_reads() -> None:
    now = [0.0]
    replicas = _replicas("one", clock=lambda: now[0])
    only = replicas.choose()
    assert only is not None
    replicas.failed(only)
    assert replicas.choose() is None
    assert not _replicas(clock=lambda: 0.0) and _replicas(clock=lambda: 0.0).choose() is None
