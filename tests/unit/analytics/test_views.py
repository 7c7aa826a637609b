"""The view names, kinds and words the migration fixes agree with the code they mirror, and
the rendering of query results is the one documented."""

from __future__ import annotations

import importlib.util
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from uuid import UUID

import pytest

from app.events import AWAITED_KINDS
from app.store.analytics import (
    INTERNAL_VIEWS,
    VIEWS,
    Column,
    NoTimeColumnError,
    UnknownViewError,
    aligned_table,
    json_value,
    text_value,
    view_query,
)

ROOT = Path(__file__).resolve().parents[3]


VIEW_FILES = ROOT / "migrations" / "sql" / "views"


def migration() -> ModuleType:
    path = ROOT / "migrations" / "versions" / "0006_analytics.py"
    spec = importlib.util.spec_from_file_location("analytics_migration", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tool_calls_lists_every_action_a_service_answers() -> None:
    assert set(migration().TOOL_KINDS) == set(AWAITED_KINDS)


def test_every_view_can_be_exported_and_is_documented() -> None:
    views = {path.stem for path in VIEW_FILES.glob("*.sql")}
    assert {"llm_calls", "agent_states", "platform_audit", "evaluation_sessions"} <= views
    # session_state is the projection's table; the internal views are no analyst's
    assert INTERNAL_VIEWS <= views
    assert set(VIEWS) == views - INTERNAL_VIEWS | {"session_state"}
    doc = (ROOT / "docs" / "analytics.md").read_text(encoding="utf-8")
    for name in VIEWS:
        assert f"### `{name}`" in doc, name


def test_the_limit_words_the_view_looks_for_are_the_controllers() -> None:
    """agent_states.limit_reached matches the reason's start: a reworded reason would leave
    the column NULL (and the documented iteration-limit query empty). The controller's
    reasons are worded in its decisions (app/agent/decisions.py)."""
    controller = (ROOT / "app" / "agent" / "decisions.py").read_text(encoding="utf-8")
    view = (VIEW_FILES / "agent_states.sql").read_text(encoding="utf-8")
    for words in re.findall(r"LIKE '([^%']+)%'", view):
        assert f'"{words} (' in controller or f'f"{words} (' in controller, words


def test_view_query_takes_only_known_names() -> None:
    with pytest.raises(UnknownViewError, match="llm_calls"):
        view_query("events; DROP TABLE events")


def test_view_query_since_is_a_utc_bound() -> None:
    sql, args = view_query("llm_calls", datetime(2026, 12, 1, 14, 30))
    assert sql.endswith("WHERE created_at >= $1 ORDER BY created_at, session_id, seq")
    assert args == [datetime(2026, 12, 1, 14, 30, tzinfo=UTC)]
    sql, args = view_query("daily_usage", datetime(2026, 12, 1, 14, 30, tzinfo=UTC))
    assert "WHERE day >= $1" in sql and args == [date(2026, 12, 1)]
    assert view_query("tool_calls")[1] == []


def test_values_as_text_and_json() -> None:
    moment = datetime(2026, 12, 1, 3, 4, 5, 6, tzinfo=UTC)
    assert text_value(None) == "" and text_value(True) == "true"
    assert text_value(["stop"]) == '["stop"]'
    assert text_value(moment) == "2026-12-01T03:04:05.000006+00:00"
    assert json_value(Decimal("0.0800")) == 0.08 and json_value(Decimal("3")) == 3
    assert json_value(UUID(int=1)) == "00000000-0000-0000-0000-000000000001"
    assert json_value(b"\x01\xff") == "\\x01ff"


def test_aligned_table_is_psql_like() -> None:
    table = aligned_table(
        [Column("model", "text"), Column("calls", "int8")], [("gpt-4o", 12), ("o3", 7)]
    )
    assert table.splitlines() == [
        " model  | calls",
        "--------+-------",
        " gpt-4o |    12",
        " o3     |     7",
        "(2 rows)",
    ]


def test_a_view_of_whole_runs_takes_no_since() -> None:
    with pytest.raises(NoTimeColumnError, match="evaluation_usage has no time column"):
        view_query("evaluation_usage", date(2026, 12, 1))
    assert view_query("evaluation_usage") == (
        "SELECT * FROM evaluation_usage ORDER BY evaluation_run",
        [],
    )
