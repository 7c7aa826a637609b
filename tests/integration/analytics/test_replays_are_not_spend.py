"""A replay is not model spend: its calls are served from the recording (they copy its usage
and cost for the replay's cost limit), so the views count the spend once, in the recording.

Before migration 0008, daily_usage and session_costs summed the served calls too: the day's
cost was twice what was spent, and every replay added the recording's cost again; the
documented "cost per model per day" query said so. Each assertion here failed then.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import asyncpg

from app.store import EventStore
from app.store.analytics import run_query
from tests.support.priced_recordings import record_and_replay

DOC = Path(__file__).resolve().parents[3] / "docs" / "analytics.md"


def documented(name: str) -> str:
    match = re.search(rf"<!-- query: {name} -->.*?```sql\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert match is not None, name
    return match[1]


async def test_daily_usage_and_session_costs_count_a_replayed_session_once(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    spent = await record_and_replay(store)
    total = sum(spent.costs)

    [day] = await superuser.fetch(
        "SELECT * FROM daily_usage WHERE gen_ai_request_model = $1", spent.model
    )
    assert (day["llm_calls"], day["sessions"]) == (3, 1)
    assert day["gen_ai_usage_input_tokens"] == spent.input_tokens
    assert day["gen_ai_usage_output_tokens"] == spent.output_tokens
    assert day["cost_usd"] == total
    assert day["latency_p50_ms"] == 800.0  # a served call's 0 ms is no model's latency

    costs = {
        row["session_id"]: row
        for row in await superuser.fetch(
            "SELECT * FROM session_costs WHERE session_id = ANY($1::uuid[])",
            [spent.recorded, spent.replayed],
        )
    }
    recorded, replayed = costs[spent.recorded], costs[spent.replayed]
    assert (recorded["llm_calls"], recorded["cost_usd"], recorded["replay_of"]) == (3, total, None)
    assert recorded["gen_ai_usage_input_tokens"] == spent.input_tokens
    assert (recorded["replayed_llm_calls"], recorded["replayed_cost_usd"]) == (0, None)
    assert replayed["replay_of"] == spent.recorded
    assert (replayed["llm_calls"], replayed["cost_usd"], replayed["models"]) == (0, None, [])
    assert replayed["gen_ai_usage_input_tokens"] == replayed["gen_ai_usage_output_tokens"] == 0
    assert (replayed["replayed_llm_calls"], replayed["replayed_cost_usd"]) == (3, total)


async def test_served_calls_observations_and_errors_are_marked(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    spent = await record_and_replay(store)
    calls = await superuser.fetch(
        "SELECT session_id, seq, replayed, replayed_from FROM llm_calls "
        "WHERE session_id = ANY($1::uuid[]) ORDER BY session_id, seq",
        [spent.recorded, spent.replayed],
    )
    recorded_seqs = [c["seq"] for c in calls if c["session_id"] == spent.recorded]
    assert all(not c["replayed"] and c["replayed_from"] is None for c in calls
               if c["session_id"] == spent.recorded)  # fmt: skip
    served = [c for c in calls if c["session_id"] == spent.replayed]
    assert [c["replayed"] for c in served] == [True] * 3
    assert [c["replayed_from"] for c in served] == recorded_seqs

    tools = await superuser.fetch(
        "SELECT session_id, replayed, failed FROM tool_calls WHERE session_id = ANY($1::uuid[])",
        [spent.recorded, spent.replayed],
    )
    assert sorted((t["session_id"] == spent.replayed, t["replayed"]) for t in tools) == [
        (False, False),
        (False, False),
        (True, True),
        (True, True),
    ]
    errors = await superuser.fetch(
        "SELECT session_id, replayed FROM errors WHERE session_id = ANY($1::uuid[])",
        [spent.recorded, spent.replayed],
    )
    assert sorted((e["session_id"] == spent.replayed, e["replayed"]) for e in errors) == [
        (False, False),
        (True, True),
    ]


async def test_the_documented_queries_leave_out_what_a_replay_served(
    store: EventStore, analyst_database_url: str
) -> None:
    """As the analyst, through `chronicle sql`'s path: the team lead's questions answered
    once per thing that happened (the database holds nothing but this recording and its
    replay)."""
    spent = await record_and_replay(store)
    total = sum(spent.costs)

    async def query(name: str) -> list[tuple[object, ...]]:
        result = await run_query(analyst_database_url, documented(name))
        return [tuple(row) for row in result.rows]

    [(_, model, calls, input_tokens, output_tokens, cost, unpriced)] = await query(
        "cost_per_model_per_day"
    )
    assert (model, calls, input_tokens, output_tokens, unpriced) == (
        spent.model, 3, spent.input_tokens, spent.output_tokens, 0
    )  # fmt: skip
    assert cost == round(Decimal(repr(total)), 4)
    assert [row[:2] for row in await query("model_latency")] == [(spent.model, 3)]
    assert {row[0] for row in await query("slowest_tools")} == {spent.recorded}
    assert [row[1:3] for row in await query("tool_error_rate")] == [(2, 2)]
    assert [row[1:] for row in await query("errors_per_day")] == [("error", spent.errors)]
    assert [row[0] for row in await query("costliest_sessions")] == [spent.recorded]
