"""The session_state fold adds only counts the views count, and a total stops at bigint's
maximum rather than fail the projection's write for every session after it (pure code)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from app.events.usage import MAX_COUNT
from app.projections import SESSION_STATE, SessionState
from app.projections.session_state import BIGINT_MAX
from app.projections.sql.projection_store import ProjectionRows
from app.store import RecordedEvent

SESSION = uuid.uuid4()


def _call(seq: int, **usage: Any) -> RecordedEvent:
    return RecordedEvent(
        global_position=seq, session_id=SESSION, seq=seq, event_id=uuid.uuid4(), tx=seq,
        kind="llm.call", source="agent", cause=None, payload={"model": "m", "usage": usage},
        schema_version=1, created_at=datetime(2026, 1, 1, tzinfo=UTC), hash=b"",
    )  # fmt: skip


def test_odd_counts_are_not_added_and_totals_stop_at_bigint() -> None:
    rows = ProjectionRows()
    projection = SessionState()
    calls = [
        _call(1, prompt_tokens=10**15, completion_tokens=-5),  # before: -5 was added
        _call(2, prompt_tokens=10**25, completion_tokens=None),  # before: overflowed bigint
        *(_call(seq, prompt_tokens=MAX_COUNT) for seq in range(3, 1030)),
    ]
    for call in calls:
        projection.apply(rows, call)
    row = rows.get(SESSION_STATE, SESSION)
    assert row is not None
    assert (row.model_calls, row.output_tokens) == (1029, 0)
    assert row.input_tokens == BIGINT_MAX  # 10**15 + 1027 * (2**53 - 1) is beyond it


def _call_with(seq: int, **payload: Any) -> RecordedEvent:
    return _call(seq)._replace(payload={"model": "m", **payload})


def test_a_lost_call_leaves_the_cost_unknown_and_a_failed_one_free() -> None:
    rows = ProjectionRows()
    projection = SessionState()
    projection.apply(rows, _call_with(1, cost_usd=0.5))
    projection.apply(rows, _call_with(2, error="refused", error_kind="auth", cost_usd=None))
    row = rows.get(SESSION_STATE, SESSION)
    assert row is not None
    assert (row.failed_calls, row.unpriced_calls) == (1, 0)  # a refused call is not paid
    projection.apply(rows, _call_with(3, error="in flight at takeover", error_kind="lost"))
    assert (row.failed_calls, row.unpriced_calls) == (2, 1)  # a lost one may have been
    projection.apply(rows, _call_with(4, error="the stream was cut", error_kind="cut"))
    assert (row.failed_calls, row.unpriced_calls) == (3, 2)  # a cut stream was, in part


def test_events_applied_already_do_not_count_twice() -> None:
    """An archived session imported again after its months were dropped comes back with new
    global positions: the runner meets its events again, and its row must not double."""
    rows = ProjectionRows()
    projection = SessionState()
    calls = [_call(seq, prompt_tokens=10, completion_tokens=2) for seq in (1, 2, 3)]
    for call in calls:
        projection.apply(rows, call)
    for call in calls:  # again, at later positions
        projection.apply(rows, call._replace(global_position=call.global_position + 100))
    row = rows.get(SESSION_STATE, SESSION)
    assert row is not None
    assert (row.model_calls, row.input_tokens, row.output_tokens, row.last_seq) == (3, 30, 6, 3)
    projection.apply(rows, _call(4, prompt_tokens=1))
    assert (row.model_calls, row.input_tokens) == (4, 31)
