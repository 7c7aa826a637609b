"""``GET /api/usage`` gives the numbers ``chronicle sql`` gives over the analytics views, for the
same days; a member sees only their own sessions' usage, an admin everyone's or one user's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess, start_server
from tests.support.cli import chronicle, cli_environment
from tests.support.usage_workload import record


@pytest.fixture
def server(
    app_database_url: str, database_url: str, analyst_database_url: str, tmp_path: Path
) -> Iterator[ServerProcess]:
    env = {
        **cli_environment(app_database_url, tmp_path),
        "CHRONICLE_OWNER_DATABASE_URL": database_url,
        "CHRONICLE_ANALYST_DATABASE_URL": analyst_database_url,
    }
    started = start_server(env)
    try:
        yield started
    finally:
        started.stop()


def sql(server: ServerProcess, query: str) -> list[dict[str, Any]]:
    """``chronicle sql --json`` as the analyst: one dict per row."""
    done = chronicle("sql", "--json", query, env=server.env)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def usage(server: ServerProcess, token: str, **query: str) -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/usage", params=query, headers={"Authorization": f"Bearer {token}"}
    )


def calls_of(rows: list[dict[str, Any]], key: str) -> dict[Any, tuple[Any, ...]]:
    """Each group's calls, failed calls, tokens in and out, unpriced calls and cost (6 places)."""
    return {
        row[key]: (
            int(row["llm_calls"]),
            int(row["failed_llm_calls"]),
            int(row["input_tokens"]),
            int(row["output_tokens"]),
            int(row["unpriced_calls"]),
            None if row["cost_usd"] is None else round(float(row["cost_usd"]), 6),
        )
        for row in rows
    }


SUMS = """sum(llm_calls) AS llm_calls, sum(failed_llm_calls) AS failed_llm_calls,
sum(gen_ai_usage_input_tokens) AS input_tokens, sum(gen_ai_usage_output_tokens) AS output_tokens,
sum(unpriced_calls) AS unpriced_calls, sum(cost_usd) AS cost_usd"""


def test_usage_is_what_chronicle_sql_says_and_a_member_sees_only_theirs(
    server: ServerProcess,
) -> None:
    mia, bob = server.token("mia"), server.token("bob")
    admin = server.token("root", admin=True)
    with ThreadPoolExecutor(1) as pool:
        sessions = pool.submit(
            asyncio.run,
            record(server.env["CHRONICLE_DATABASE_URL"], {"mia": "mia", "bob": "bob"}),
        ).result()
    today = datetime.now(UTC).date()
    first, last = (today - timedelta(days=6)).isoformat(), today.isoformat()
    days = f"day BETWEEN '{first}' AND '{last}'"
    since = f"created_at >= '{first}' AND created_at < '{today + timedelta(days=1)}'"

    everyone = usage(server, admin, **{"from": first, "to": last})
    assert everyone.status_code == 200, everyone.text
    body = everyone.json()
    assert (body["first_day"], body["last_day"], body["user"]) == (first, last, None)
    assert set(body["users_to_pick"]) == {"mia", "bob", "root"}
    by_day = sql(server, f"SELECT day, {SUMS} FROM daily_usage WHERE {days} GROUP BY day")
    assert calls_of(body["days"], "day") == calls_of(by_day, "day")
    by_model = sql(
        server,
        f"SELECT gen_ai_request_model AS model, {SUMS} FROM daily_usage WHERE {days} "
        "GROUP BY gen_ai_request_model",
    )
    assert calls_of(body["models"], "model") == calls_of(by_model, "model")
    assert calls_of(body["models"], "model") == {
        "openai/m1": (3, 1, 110, 21, 0, 0.75),
        "openai/m2": (1, 0, 50, 5, 1, None),
    }
    assert calls_of(body["users"], "user") == {
        "mia": (2, 1, 100, 20, 0, 0.5),
        "bob": (1, 0, 50, 5, 1, None),
        None: (1, 0, 10, 1, 0, 0.25),
    }
    tools = sql(
        server,
        "SELECT tool, count(*) AS calls, count(*) FILTER (WHERE failed) AS failed FROM tool_calls "
        f"WHERE observation_seq IS NOT NULL AND NOT replayed AND {since} GROUP BY tool",
    )
    assert (
        {t["tool"]: (t["calls"], t["failed"]) for t in body["tools"]}
        == {t["tool"]: (t["calls"], t["failed"]) for t in tools}
        == {"run": (3, 2)}
    )
    errors = sql(
        server,
        f"SELECT kind, count(*) AS errors FROM errors WHERE NOT replayed AND {since} GROUP BY kind",
    )
    assert (
        {e["kind"]: e["errors"] for e in body["error_kinds"]}
        == {e["kind"]: e["errors"] for e in errors}
        == {"llm.call": 1, "error": 1}
    )

    # mia: her session's calls only, as the analyst reads them for her session ids
    own = usage(server, mia)
    assert own.status_code == 200, own.text
    mine = own.json()
    assert mine["user"] == "mia" and mine["users_to_pick"] == ["mia"]
    ids = ", ".join(f"'{s}'" for s in sessions["mia"])
    hers = sql(
        server,
        "SELECT gen_ai_request_model AS model, count(*) AS llm_calls, "
        "count(*) FILTER (WHERE error_message IS NOT NULL) AS failed_llm_calls, "
        "coalesce(sum(gen_ai_usage_input_tokens), 0) AS input_tokens, "
        "coalesce(sum(gen_ai_usage_output_tokens), 0) AS output_tokens, "
        "count(*) FILTER (WHERE cost_usd IS NULL AND error_message IS NULL) AS unpriced_calls, "
        f"sum(cost_usd) AS cost_usd FROM llm_calls WHERE session_id IN ({ids}) AND NOT replayed "
        "GROUP BY gen_ai_request_model",
    )
    assert calls_of(mine["models"], "model") == calls_of(hers, "model")
    assert [u["user"] for u in mine["users"]] == ["mia"]
    assert mine["total"]["llm_calls"] == 2 and mine["total"]["cost_usd"] == 0.5
    assert {t["tool"]: (t["calls"], t["failed"]) for t in mine["tools"]} == {"run": (2, 1)}
    assert mine["errors"] == 1  # her failed call; bob's error observation is not hers
    assert usage(server, mia, user="bob").status_code == 403
    assert usage(server, bob, user="bob").json()["total"]["llm_calls"] == 1

    # an admin picks one user
    picked = usage(server, admin, user="bob").json()
    assert picked["user"] == "bob"
    assert calls_of(picked["models"], "model") == {"openai/m2": (1, 0, 50, 5, 1, None)}
    assert usage(server, admin, user="nobody-here").status_code == 404

    # the range: before today, nothing; a range the wrong way round is refused
    yesterday = (today - timedelta(days=1)).isoformat()
    empty = usage(server, admin, **{"from": first, "to": yesterday}).json()
    assert empty["days"] == [] and empty["total"]["llm_calls"] == 0
    assert empty["total"]["cost_usd"] is None
    backwards = usage(server, admin, **{"from": last, "to": first})
    assert backwards.status_code == 422 and "after" in backwards.json()["detail"]
