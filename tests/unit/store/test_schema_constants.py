"""Values of the code that the SQL files spell out are the code's: the largest count a view
reads, the words a stuck agent stopped with before it said so, the platform log's id."""

from __future__ import annotations

from app.events.platform_audit import PLATFORM_LOG_ID
from app.events.usage import MAX_COUNT
from tests.support.repository import ROOT

SQL = ROOT / "migrations" / "sql"


def test_chronicle_count_reads_up_to_the_codes_largest_count() -> None:
    assert f"BETWEEN 0 AND {MAX_COUNT}\n" in (SQL / "functions" / "chronicle_count.sql").read_text()


def test_a_stuck_ending_is_the_recorded_field_then_the_old_words() -> None:
    view = (SQL / "views" / "evaluation_sessions.sql").read_text()
    assert "coalesce((last_state.payload->>'stuck')::boolean," in view
    assert "s.state_reason LIKE 'the agent looks stuck%')" in view  # states before 0021
    decisions = (ROOT / "app" / "agent" / "decisions.py").read_text()  # the controller's words
    assert 'f"the agent looks stuck: {why}", "error", stuck=True)' in decisions


def test_the_platform_log_is_left_out_by_its_id() -> None:
    for name in ("session_costs", "platform_audit"):
        assert f"'{PLATFORM_LOG_ID}'::uuid" in (SQL / "views" / f"{name}.sql").read_text(), name
