"""`chronicle sessions` stays instant with 100,000 sessions: every variant of the list query
is a range of one index in created_at order, reading only the rows it returns."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from app.projections import SessionState
from app.sessions.sql.session_rows import list_sql
from app.sessions.summary import recent_sessions
from app.store import EventStore
from app.store.partitions import current_month

SESSIONS = 100_000
FILL = """
INSERT INTO session_state (session_id, title, created_at, updated_at, status, model,
                           last_seq, cost_usd)
SELECT gen_random_uuid(), 'task ' || n,
       timestamptz '2026-01-01' + n * interval '1 minute',
       timestamptz '2026-01-01' + n * interval '1 minute',
       (ARRAY['finished', 'working', 'error', 'limit', 'awaiting_user_input'])[1 + n % 5],
       (ARRAY['openai/gpt-4o', 'anthropic/claude-sonnet', 'openai/local'])[1 + n % 3],
       10, 0.01
FROM generate_series(1, $1) AS n
"""
VARIANTS = [
    {},
    {"state": "finished"},
    {"state": "interrupted"},
    {"model": "openai/local"},
    {"since": datetime(2026, 2, 1, tzinfo=UTC)},
    {"state": "error", "model": "openai/gpt-4o", "since": datetime(2026, 1, 15, tzinfo=UTC)},
]


@pytest.fixture
async def full(superuser: asyncpg.Connection) -> asyncpg.Connection:
    await superuser.execute(FILL, SESSIONS)
    # The projection's position at the head (of an empty log): a read has nothing to apply.
    await superuser.execute(
        "INSERT INTO projections (name, version) VALUES ('session_state', $1)",
        SessionState.version,
    )
    await superuser.execute("ANALYZE session_state")
    return superuser


def nodes(plan: dict) -> list[dict]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += nodes(child)
    return found


@pytest.mark.parametrize("filters", VARIANTS, ids=lambda f: ",".join(f) or "all")
async def test_each_list_query_is_an_index_range(full: asyncpg.Connection, filters: dict) -> None:
    sql, params = list_sql(
        state=filters.get("state"), model="model" in filters, since="since" in filters
    )
    values = {**filters, "limit": 20}
    explained = await full.fetchval(
        f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", *(values[p] for p in params)
    )
    plan = json.loads(explained)[0]
    scans = [n for n in nodes(plan["Plan"]) if n.get("Relation Name") == "session_state"]
    assert scans and all(n["Node Type"] in ("Index Scan", "Index Only Scan") for n in scans), plan
    assert not any(n["Node Type"] == "Sort" for n in nodes(plan["Plan"])), plan
    # Only about the rows it returns are read (a sequential scan would read 100,000).
    assert sum(n.get("Actual Rows", 0) for n in scans) <= 2_000, plan
    assert plan["Execution Time"] < 50, plan


async def test_the_session_list_over_100_000_sessions_is_instant(
    full: asyncpg.Connection, store: EventStore
) -> None:
    await recent_sessions(store)  # warm: the first read registers nothing new
    started = time.perf_counter()
    listed = await recent_sessions(store, 20, state="finished")
    elapsed = time.perf_counter() - started
    assert len(listed) == 20 and all(s.state == "finished" for s in listed)
    assert listed[0].created_at == datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=SESSIONS)
    assert elapsed < 0.25, elapsed  # generous for a loaded 2-core CI machine; bench reports it


#: The annotation filters (migration 0025): "not reviewed" probes the partial index of
#: annotations per listed row; a label or a tag reads the annotations over it, not the
#: sessions' other events.
ANNOTATION_VARIANTS: list[dict[str, Any]] = [
    {"unreviewed": True},
    {"label": "unsafe command"},
    {"tag": "prod"},
    {"state": "finished", "label": "good", "unreviewed": True},
]


#: Events of the listed sessions, so the planner weighs reading every event of a month (its
#: statistics) against the annotations index: an empty log is read whole for free, and since
#: events is partitioned by month (migration 0026) the planner then reads the empty months once
#: instead of probing the index per row, which says nothing of a log with data.
EVENTS = """
INSERT INTO events (session_id, seq, event_id, kind, source, payload, hash)
SELECT s.session_id, n, gen_random_uuid(), 'message', 'user', '{"content":"hi"}', sha256('x')
FROM (SELECT session_id FROM session_state ORDER BY created_at DESC LIMIT 2000) AS s,
     generate_series(1, 10) AS n
"""


@pytest.fixture
async def logged(full: asyncpg.Connection) -> asyncpg.Connection:
    await full.execute(EVENTS)
    await full.execute("ANALYZE events")
    return full


@pytest.mark.parametrize("filters", ANNOTATION_VARIANTS, ids=lambda f: ",".join(f))
async def test_each_annotation_filter_reads_the_annotations_index(
    logged: asyncpg.Connection,
    filters: dict[str, Any],
) -> None:
    sql, params = list_sql(
        state=filters.get("state"),
        model=False,
        since=False,
        label="label" in filters,
        tag="tag" in filters,
        unreviewed=bool(filters.get("unreviewed")),
    )
    values = {**filters, "limit": 20}
    explained = await logged.fetchval(
        f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", *(values[p] for p in params)
    )
    plan = json.loads(explained)[0]
    every = nodes(plan["Plan"])
    assert not any(
        n["Node Type"] == "Seq Scan" and n.get("Relation Name") == "events" for n in every
    )
    # each month's part of events_annotations (the name PostgreSQL gave it in the month)
    indexes = {n["Index Name"] for n in every if n.get("Index Name", "").startswith("events")}
    assert indexes and all(
        re.fullmatch(r"events_annotations|events_\d{4}_\d{2}_annotations", name) for name in indexes
    ), plan
    # the month that holds the events is read through the index; the empty months ahead may
    # be scanned (reading nothing is what they cost)
    this_month = f"events_{current_month():%Y_%m}"
    assert not any(
        n["Node Type"] == "Seq Scan" and n.get("Relation Name") == this_month for n in every
    ), plan
    assert plan["Execution Time"] < 200, plan
