"""The session_state fold without a database: statuses, exact costs, unknown costs, and
text PostgreSQL cannot hold."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from app.config import Settings
from app.projections import SESSION_STATE, SessionState, SessionStateRow
from app.projections.config import ProjectionsConfig
from app.projections.session_state import status_of
from app.projections.sql.projection_store import ProjectionRows
from app.store import RecordedEvent

SESSION = uuid.uuid4()


def event(seq: int, kind: str, source: str = "agent", **payload: Any) -> RecordedEvent:
    return RecordedEvent(
        global_position=seq, session_id=SESSION, seq=seq, event_id=uuid.uuid4(), tx=seq,
        kind=kind, source=source, cause=None, payload=payload, schema_version=1,
        created_at=datetime(2026, 1, 1, 0, 0, seq, tzinfo=UTC), hash=b"",
    )  # fmt: skip


def fold(*events: RecordedEvent) -> SessionStateRow:
    rows = ProjectionRows()
    projection = SessionState()
    for recorded in events:
        projection.apply(rows, recorded)
    row = rows.get(SESSION_STATE, SESSION)
    assert row is not None
    return row


def test_statuses_follow_the_controller_not_the_user() -> None:
    assert status_of("running", "") == "working"
    assert status_of("rate_limited", "") == "working"
    assert status_of("stopped", "reached the cost limit ($1.00, spent $1.2)") == "limit"
    assert status_of("stopped", "interrupted by SIGTERM") == "stopped"
    assert status_of("something new", "") == "error"
    row = fold(
        event(1, "session.created", "user", title="t", config={"model": "m"}),
        event(2, "agent.state", state="finished"),
        event(3, "agent.state", "user", state="running"),  # a request, not a state
    )
    assert (row.status, row.last_seq, row.ended_at) == (
        "finished",
        3,
        row.created_at.replace(second=2),
    )


def test_costs_are_exact_sums_and_unknown_is_none_not_zero() -> None:
    calls = [event(i, "llm.call", model="m", cost_usd=0.1, usage={}) for i in range(1, 4)]
    assert fold(*calls).cost_usd == Decimal("0.3")  # floats would give 0.30000000000000004
    unpriced = fold(event(1, "llm.call", model="m", usage={"prompt_tokens": 5}))
    assert unpriced.cost_usd is None and unpriced.unpriced_calls == 1
    assert unpriced.input_tokens == 5
    failed = fold(event(1, "llm.call", model="m", error="boom"))
    assert failed.cost_usd == Decimal(0) and failed.failed_calls == 1


def test_text_postgresql_cannot_hold_is_replaced_in_the_row() -> None:
    row = fold(event(1, "session.created", "user", title="a\x00b\udce9", config={}))
    assert row.title == "a\ufffdb\ufffd"


def test_the_settings_reach_the_runner_config() -> None:
    settings = Settings.model_construct(
        projections_inline=False, projections_standby_interval=0.5, projections_batch_size=9
    )
    assert settings.projections == ProjectionsConfig(
        inline=False, standby_interval=0.5, batch_size=9
    )
    assert Settings.model_construct().projections == ProjectionsConfig()


def test_a_redaction_of_the_creation_takes_the_copies_the_row_made() -> None:
    created = event(
        1, "session.created", "user", title="deploy with key sk-123",
        config={"model": "m", "workspace": "/home/sk-123", "agent": "a"},
    )  # fmt: skip
    titled = fold(
        created, event(2, "redaction", "user", target_seq=1, path="/title", removed="0" * 64)
    )
    assert (titled.title, titled.workspace, titled.model) == ("[redacted]", "/home/sk-123", "m")
    config = fold(
        created, event(2, "redaction", "user", target_seq=1, path="/config", removed="0" * 64)
    )
    assert (config.title, config.workspace, config.model, config.agent) == (
        "deploy with key sk-123", None, None, None,
    )  # fmt: skip
    whole = fold(created, event(2, "redaction", "user", target_seq=1, path="", removed="0" * 64))
    assert (whole.title, whole.workspace) == ("[redacted]", None)
    other = fold(created, event(2, "redaction", "user", target_seq=2, path="", removed="0" * 64))
    assert other.title == "deploy with key sk-123"
