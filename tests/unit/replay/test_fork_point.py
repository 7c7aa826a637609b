"""Where a fork may cut a recording, and where ``--on-divergence fork`` cuts it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from app.replay.divergence import ExtraCall, RequestDivergence
from app.replay.fork import ForkError, fork_point, prefix_of
from app.store import RecordedEvent

SESSION = uuid.uuid4()


def event(seq: int, kind: str, cause: int | None = None, **payload: Any) -> RecordedEvent:
    return RecordedEvent(
        global_position=seq, session_id=SESSION, seq=seq, event_id=uuid.uuid4(), tx=seq,
        kind=kind, source="agent", cause=cause, payload=payload, schema_version=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC), hash=b"",
    )  # fmt: skip


RECORDING = [
    event(1, "session.created"),
    event(2, "message"),
    event(3, "llm.call"),
    event(4, "run", cause=3, command="ls"),
    event(5, "run.output", cause=4, exit_code=0),
    event(6, "llm.call"),
    event(7, "run", cause=6, command="ls"),
    event(8, "run.output", cause=7, exit_code=0),
    event(9, "llm.call"),
    event(10, "finish", cause=9),
]


def test_a_cut_between_an_action_and_its_observation_is_refused_with_the_way_out() -> None:
    with pytest.raises(ForkError, match="between the run at seq 4 and its observation at seq 5"):
        prefix_of(RECORDING, 4)
    assert [e.seq for e in prefix_of(RECORDING, 5)] == [1, 2, 3, 4, 5]
    with pytest.raises(ForkError, match="between 2 and 10"):
        prefix_of(RECORDING, 11)


def _request(*, step: int, recorded_seq: int) -> RequestDivergence:
    return RequestDivergence(
        step=step, recorded_seq=recorded_seq, recorded_fingerprint="a", new_fingerprint="b",
        summary="differs",
    )  # fmt: skip


def test_on_divergence_cuts_before_the_call_or_after_the_recording() -> None:
    request = _request(step=3, recorded_seq=9)
    assert fork_point(RECORDING, request) == 8
    # A cut that would fall inside an action's answer moves back before the action.
    inside = _request(step=2, recorded_seq=8)
    assert fork_point(RECORDING, inside) == 6
    extra = ExtraCall(step=4, summary="one more call")
    assert fork_point(RECORDING, extra) == 10
