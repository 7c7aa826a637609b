"""Every query of docs/analytics.md, run as the analyst on a known recorded workload, must give
the numbers computed here from the recorded events themselves.

The queries are read from the document (each ```sql block after a ``<!-- query: NAME -->``
marker), so a query edited in the docs is the query tested, and a query added without a
check here fails ``test_every_documented_query_is_checked``.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from app.store.analytics import QueryResult, run_query

MICROSECOND = timedelta(microseconds=1)

DOC = Path(__file__).resolve().parents[3] / "docs" / "analytics.md"
QUERY = re.compile(r"<!-- query: (?P<name>[a-z_]+) -->.*?```sql\n(?P<sql>.*?)```", re.S)


def documented_queries() -> dict[str, str]:
    found: dict[str, str] = {}
    for match in QUERY.finditer(DOC.read_text(encoding="utf-8")):
        assert match["name"] not in found, f"two queries named {match['name']}"
        found[match["name"]] = match["sql"]
    return found


def percentile_cont(values: list[float], fraction: float) -> float:
    """PostgreSQL's percentile_cont: linear interpolation between the closest ranks."""
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def rounded(value: float | Decimal, places: int) -> Decimal:
    """As PostgreSQL's ``round(numeric, places)`` does it: halves away from zero."""
    exact = value if isinstance(value, Decimal) else Decimal(repr(value))
    return exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def tool_rows(workload: Any) -> list[dict[str, Any]]:
    """Each action with its observation, computed from the recorded events."""
    rows = []
    for session, events in workload.sessions.items():
        answers = {event.cause: event for event in events if event.source == "environment"}
        for event in events:
            if event.kind not in ("run", "file.read", "mcp.call"):
                continue
            answer = answers[event.seq]
            failed = (
                answer.kind == "error"
                or bool(answer.payload.get("timed_out"))
                or (answer.payload.get("exit_code") or 0) != 0
                or bool(answer.payload.get("is_error"))
            )
            rows.append(
                {
                    "session_id": session,
                    "seq": event.seq,
                    "tool": event.kind,
                    # exact, in ms: timestamps are whole microseconds
                    "duration_ms": Decimal((answer.created_at - event.created_at) // MICROSECOND)
                    / 1000,
                    "failed": failed,
                    "target": event.payload.get("command")
                    or event.payload.get("path")
                    or f"{event.payload.get('server')}.{event.payload.get('tool')}",
                }
            )
    return rows


def check_model_latency(result: QueryResult, workload: Any) -> None:
    latencies: dict[str, list[float]] = defaultdict(list)
    for event in workload.events("llm.call"):
        if event.payload.get("error") is None:
            latencies[event.payload["model"]].append(event.payload["latency_ms"])
    expected = [
        (model, len(values), rounded(percentile_cont(values, 0.5), 1),
         rounded(percentile_cont(values, 0.95), 1))
        for model, values in sorted(latencies.items())
    ]  # fmt: skip
    assert result.rows == expected
    # Known by construction: the gpt-4o calls' latencies are 400, 500, 900, 1100 ms.
    assert result.rows[1][2:] == (Decimal("700.0"), Decimal("1070.0"))


def check_slowest_tools(result: QueryResult, workload: Any) -> None:
    # The query orders by its rounded column (an output name wins in ORDER BY), so two calls
    # within 0.05 ms of each other are ordered by session and seq, as here.
    rows = sorted(
        tool_rows(workload),
        key=lambda r: (-rounded(r["duration_ms"], 1), r["session_id"], r["seq"]),
    )
    expected = [
        (r["session_id"], r["seq"], r["tool"], r["target"], rounded(r["duration_ms"], 1))
        for r in rows[:10]
    ]
    assert [row[:4] for row in result.rows] == [row[:4] for row in expected]
    for got, want in zip(result.rows, expected, strict=True):
        assert abs(got[4] - want[4]) <= Decimal("0.1")
    # The workload pauses longer before each later answer: the slowest is the last one.
    assert result.rows[0][4] >= Decimal("100")


def check_tool_error_rate(result: QueryResult, workload: Any) -> None:
    calls: dict[str, list[bool]] = defaultdict(list)
    for row in tool_rows(workload):
        calls[row["tool"]].append(row["failed"])
    expected = sorted(
        (
            (tool, len(flags), sum(flags), round(Decimal(sum(flags)) / len(flags), 3))
            for tool, flags in calls.items()
        ),
        key=lambda row: (-row[3], row[0]),
    )
    assert result.rows == expected
    # By construction: run 6 failed of 10 (4 pytest, 2 time-outs), file.read 0 of 4,
    # mcp.call 2 of 4.
    assert {row[0]: row[1:3] for row in result.rows} == {
        "run": (10, 6),
        "mcp.call": (4, 2),
        "file.read": (4, 0),
    }


def check_errors_per_day(result: QueryResult, workload: Any) -> None:
    counts: dict[tuple[Any, str], int] = defaultdict(int)
    for event in workload.events():
        is_error = (
            event.kind in ("error", "runtime.failed")
            or (event.kind == "llm.call" and event.payload.get("error") is not None)
            or (event.kind == "agent.state" and event.payload["state"] == "error")
        )
        if is_error:
            counts[(event.created_at.date(), event.kind)] += 1
    assert result.rows == sorted((day, kind, n) for (day, kind), n in counts.items())
    assert sum(row[2] for row in result.rows) == 2 + 1 + 1  # two MCP errors, a 429, a stuck run


def check_iteration_limit(result: QueryResult, workload: Any) -> None:
    stopped = sorted(
        (event.created_at, event.session_id)
        for event in workload.events("agent.state")
        if event.payload.get("reason", "").startswith("reached the iteration limit")
    )
    assert [(row[2], row[0]) for row in result.rows] == stopped
    assert {row[1] for row in result.rows} == {"fix the tests", "tiny question"}


def check_costliest_sessions(result: QueryResult, workload: Any) -> None:
    expected = []
    for session, events in workload.sessions.items():
        calls = [e for e in events if e.kind == "llm.call"]
        costs = [e.payload["cost_usd"] for e in calls if e.payload.get("cost_usd") is not None]
        unpriced = sum(
            1 for e in calls if e.payload.get("cost_usd") is None and e.payload.get("error") is None
        )
        if costs:
            expected.append((session, workload.titles[session], len(calls), sum(costs), unpriced))
    expected.sort(key=lambda row: (-row[3], row[0]))
    assert [row[:3] + row[4:] for row in result.rows] == [row[:3] + row[4:] for row in expected]
    assert [row[3] for row in result.rows] == pytest.approx([row[3] for row in expected])
    # "write the docs" had an unpriced call: its cost is a lower bound, and says so.
    assert ("write the docs", 1) in {(row[1], row[4]) for row in result.rows}


def check_cost_per_model_per_day(result: QueryResult, workload: Any) -> None:
    usage: dict[tuple[Any, str], list[Any]] = defaultdict(lambda: [0, 0, 0, 0.0, 0, False])
    for event in workload.events("llm.call"):
        entry = usage[(event.created_at.date(), event.payload["model"])]
        entry[0] += 1
        entry[1] += event.payload["usage"]["prompt_tokens"]
        entry[2] += event.payload["usage"]["completion_tokens"]
        if event.payload.get("cost_usd") is not None:
            entry[3] += event.payload["cost_usd"]
            entry[5] = True
        elif event.payload.get("error") is None:
            entry[4] += 1
    expected = [
        (day, model, calls, tokens_in, tokens_out,
         rounded(cost, 4) if priced else None, unpriced)
        for (day, model), (calls, tokens_in, tokens_out, cost, unpriced, priced)
        in sorted(usage.items())
    ]  # fmt: skip
    assert result.rows == expected
    by_model = {row[1]: row for row in result.rows}
    # By construction: gpt-4o 0.01 + 0.02 + 0.03 + 0.02 = 0.08 (the failed call unpriced but
    # not counted), claude 0.02 + 0.04 + 0.02 = 0.08 with one unpriced call.
    assert by_model["openai/gpt-4o"][5] == Decimal("0.0800")
    assert by_model["anthropic/claude-sonnet-4"][5:] == (Decimal("0.0800"), 1)


CHECKS: dict[str, Callable[[QueryResult, Any], None]] = {
    "model_latency": check_model_latency,
    "slowest_tools": check_slowest_tools,
    "tool_error_rate": check_tool_error_rate,
    "errors_per_day": check_errors_per_day,
    "iteration_limit": check_iteration_limit,
    "costliest_sessions": check_costliest_sessions,
    "cost_per_model_per_day": check_cost_per_model_per_day,
}


def test_every_documented_query_is_checked() -> None:
    assert set(documented_queries()) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
async def test_documented_query(name: str, workload: Any, analyst_database_url: str) -> None:
    result = await run_query(analyst_database_url, documented_queries()[name])
    assert result.rows, f"{name} returned no rows on the workload"
    CHECKS[name](result, workload)


def _ids(rows: list[tuple[Any, ...]]) -> set[uuid.UUID]:
    return {row[0] for row in rows}


async def test_views_cover_every_session_of_the_workload(
    workload: Any, analyst_database_url: str
) -> None:
    """Every recorded call and tool call appears once, with its OTel-named columns."""
    calls = await run_query(
        analyst_database_url,
        "SELECT session_id, seq, gen_ai_request_model, gen_ai_provider_name, "
        "gen_ai_usage_input_tokens, gen_ai_usage_cache_read_input_tokens, "
        "gen_ai_response_finish_reasons, attempts, error_type FROM llm_calls",
    )
    recorded = {(e.session_id, e.seq): e for e in workload.events("llm.call")}
    assert {(row[0], row[1]) for row in calls.rows} == set(recorded)
    for session, seq, model, provider, tokens_in, cached, reasons, attempts, error in calls.rows:
        payload = recorded[(session, seq)].payload
        assert model == payload["model"]
        assert provider == model.split("/")[0]
        assert tokens_in == payload["usage"]["prompt_tokens"]
        assert cached == payload["usage"]["cached_tokens"]
        assert reasons == (None if payload.get("error") else ["stop"])
        assert attempts == payload["attempts"]
        assert error == payload.get("error_kind")
    tools = await run_query(analyst_database_url, "SELECT session_id, seq FROM tool_calls")
    assert {(row[0], row[1]) for row in tools.rows} == {
        (row["session_id"], row["seq"]) for row in tool_rows(workload)
    }
    assert _ids(tools.rows) == set(workload.sessions)
