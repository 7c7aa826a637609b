"""``daily_usage`` and ``session_costs`` over the usage rollups (migration 0028) answer what
they answered when they scanned every model call (0018's views, the reference here), whether
the rollups are empty, partly refreshed or current: calls over several days and models, a
call with no model, failed, replayed and unpriced calls, latencies that are not numbers,
calls appended after a refresh, a call left uncommitted while a refresh runs, and a session
whose events left and were imported again (new positions, the same seqs), counted once."""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import asyncpg
import pytest
from app.migrations.helpers import earlier_revision

from app.events import LlmCall, SessionCreated, new_event_id
from app.events.canonical import encode
from app.events.llm import LlmResponse, LlmUsage
from app.projections import ProjectionsConfig, all_projections, running_projections
from app.store import EventStore
from app.store.analytics import refresh_usage_rollups
from tests.support.months import import_at

MODELS = ("openai/gpt-4o", "anthropic/claude-3-5-sonnet-20241022", None)
OLD = earlier_revision("0018_usage_as_sent.py")
REFERENCE = {
    "daily_usage": OLD.DAILY_USAGE_VIEW,
    "session_costs": OLD.SESSION_COSTS_VIEW,
}
ORDER = {"daily_usage": (0, 1, 2), "session_costs": (0,)}


@dataclass
class RawEvent:
    """An event as an importer may have stored it: a payload no model validated."""

    kind: str
    body: dict[str, Any]
    source: str = "agent"
    cause: int | None = None
    event_id: uuid.UUID = field(default_factory=new_event_id)
    schema_version: ClassVar[int] = 1

    def payload(self) -> dict[str, Any]:
        return self.body


def _call(rng: random.Random, model: str | None, latencies: list[float]) -> RawEvent:
    usage = LlmUsage(
        prompt_tokens=rng.randint(0, 5000),
        completion_tokens=rng.randint(0, 900),
        cached_tokens=rng.choice([0, 128]),
        reasoning_tokens=rng.choice([None, 7]),
    )
    body = LlmCall(
        model=model or "x",
        fingerprint="f" * 64,
        usage=usage,
        cost_usd=rng.choice([None, 0.25, 0.001 * rng.randint(1, 999)]),
        latency_ms=latencies.pop(),
        response=LlmResponse(content="ok", finish_reason="stop"),
    ).payload()
    if model is None:
        del body["model"]
    roll = rng.random()
    if roll < 0.1:
        body["error"], body["error_kind"] = "upstream 500", "server"
    elif roll < 0.2:
        body["replayed_from"] = 2
    elif roll < 0.25:
        body["latency_ms"] = "fast"
    elif roll < 0.3:
        body["usage"] = {"prompt_tokens": "abc", "completion_tokens": 2**80}
    return RawEvent("llm.call", body)


def _latencies(rng: random.Random, n: int) -> list[float]:
    """Distinct latencies at least 2.5% apart (so percentile_cont's ranks fall on values the
    histogram holds exactly), some repeated, and 0 and a negative one."""
    values = [0.0, -3.0, 0.4]
    while len(values) < n:
        values.append(round(values[-1] * rng.uniform(1.025, 1.3), 3))
    values += [values[5], values[9]] * 3
    rng.shuffle(values)
    return values


async def _reference(admin: asyncpg.Connection, name: str) -> list[tuple[Any, ...]]:
    select = REFERENCE[name].split(" AS\n", 1)[1].rstrip().removesuffix(";")
    return _sorted(name, await admin.fetch(select))


async def _view(admin: asyncpg.Connection, name: str) -> list[tuple[Any, ...]]:
    return _sorted(name, await admin.fetch(f"SELECT * FROM {name}"))


def _sorted(name: str, rows: list[asyncpg.Record]) -> list[tuple[Any, ...]]:
    def key(row: tuple[Any, ...]) -> tuple[str, ...]:
        return tuple(str(row[i]) for i in ORDER[name])

    return sorted((tuple(row) for row in rows), key=key)


def _same(name: str, got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    assert len(got) == len(want), name
    for row, expected in zip(got, want, strict=True):
        assert len(row) == len(expected)
        for value, wanted in zip(row, expected, strict=True):
            if isinstance(wanted, float) and isinstance(value, float):
                # a sum of floats in another order may differ in its last bits
                assert math.isclose(value, wanted, rel_tol=1e-12), (name, row, expected)
            else:
                assert value == wanted, (name, row, expected)


async def _check(admin: asyncpg.Connection) -> None:
    for name in REFERENCE:
        _same(name, await _view(admin, name), await _reference(admin, name))


async def _record(admin: asyncpg.Connection, rng: random.Random) -> list[uuid.UUID]:
    """Twelve sessions over three days, imported with the times they were recorded."""
    sessions = []
    start = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    latencies = _latencies(rng, 120)
    for index in range(12):
        session = uuid.uuid4()
        calls = [_call(rng, rng.choice(MODELS), latencies) for _ in range(rng.randint(1, 7))]
        at = start - timedelta(days=index % 3, minutes=index)
        await import_at(admin, session, [SessionCreated(title=f"s{index}"), *calls], at)
        sessions.append(session)
    return sessions


async def test_the_views_answer_as_a_scan_of_every_call_at_every_stage(
    store: EventStore, superuser: asyncpg.Connection, app_login: asyncpg.Connection
) -> None:
    rng = random.Random(28)
    sessions = await _record(superuser, rng)
    await _check(superuser)  # nothing counted yet: all of it is the views' tail

    first = await app_login.fetchrow("SELECT * FROM chronicle_refresh_usage_rollups(9)")
    assert first is not None and (first["counted"], first["caught_up"]) == (9, False)
    await _check(superuser)  # partly counted

    done = await refresh_usage_rollups(app_login, calls_per_step=5)
    assert done.counted > 0 and done.steps > 1
    await _check(superuser)
    assert (await superuser.fetchval("SELECT count(*) FROM usage_rollup_sessions")) == 12

    # appended after the refresh (today, by the application): in the tail, then counted
    latencies = _latencies(rng, 40)
    for session in sessions[:4]:
        call = LlmCall(
            model="openai/gpt-4o", fingerprint="f" * 64, latency_ms=latencies.pop(), cost_usd=0.5
        )
        await store.append(session, [call])
    late = uuid.uuid4()
    await store.append(late, [SessionCreated(title="late")], expected_seq=0)
    await store.append(late, [LlmCall(model="new/model", fingerprint="f" * 64, latency_ms=12.0)])
    await _check(superuser)
    await refresh_usage_rollups(app_login)
    await _check(superuser)
    assert (await refresh_usage_rollups(app_login)).counted == 0


async def test_a_call_uncommitted_during_a_refresh_is_counted_once_after_it(
    store: EventStore, superuser: asyncpg.Connection, app_login: asyncpg.Connection
) -> None:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="slow")], expected_seq=0)
    call = LlmCall(model="openai/gpt-4o", fingerprint="f" * 64, latency_ms=100.0, cost_usd=1.0)
    async with superuser.transaction():  # a writer whose transaction is still open
        await superuser.execute(
            "SELECT chronicle_append($1::uuid, 1, ARRAY[$2::uuid], ARRAY['llm.call'], "
            "ARRAY['agent'], ARRAY[NULL::integer], ARRAY[$3::text], ARRAY[1::smallint])",
            session, call.event_id, encode(call.payload()).text,
        )  # fmt: skip
        other = uuid.uuid4()
        await store.append(other, [SessionCreated(title="quick"), call.model_copy(
            update={"event_id": new_event_id()})], expected_seq=0)  # fmt: skip
        done = await refresh_usage_rollups(app_login)
        assert done.counted == 0  # the quick call is after the open one: not yet for anyone
    await _check(superuser)
    assert (await refresh_usage_rollups(app_login)).counted == 2
    await _check(superuser)
    [row] = await superuser.fetch("SELECT llm_calls, sessions FROM daily_usage")
    assert tuple(row) == (2, 2)


@pytest.mark.parametrize("refreshed_before", [True, False])
async def test_a_session_imported_again_is_counted_once(
    store: EventStore,
    superuser: asyncpg.Connection,
    app_login: asyncpg.Connection,
    refreshed_before: bool,
) -> None:
    rng = random.Random(7)
    session = uuid.uuid4()
    latencies = _latencies(rng, 10)
    events = [SessionCreated(title="kept"), *(_call(rng, MODELS[0], latencies) for _ in range(4))]
    at = datetime.now(UTC) - timedelta(days=1)
    await import_at(superuser, session, events, at)
    if refreshed_before:
        await refresh_usage_rollups(app_login)
    before = {name: await _view(superuser, name) for name in REFERENCE}

    # its events leave (as with their month) and come back through the import: new positions
    async with superuser.transaction():
        await superuser.execute("SET LOCAL session_replication_role = replica")
        await superuser.execute("DELETE FROM events WHERE session_id = $1", session)
        await superuser.execute("DELETE FROM event_ids WHERE session_id = $1", session)
        await superuser.execute("DELETE FROM sessions WHERE id = $1", session)
    await import_at(superuser, session, events, at)
    await refresh_usage_rollups(app_login)
    for name in REFERENCE:
        _same(name, await _view(superuser, name), before[name])


HISTOGRAM_SQL = """
WITH v AS (SELECT g, ms FROM unnest($1::integer[], $2::float8[]) AS t(g, ms)),
bands AS (
    SELECT g, chronicle_latency_bucket(ms) AS bucket, count(*) AS calls, min(ms) AS lo,
           max(ms) AS hi
    FROM v GROUP BY 1, 2
),
histograms AS (
    SELECT g, array_agg(ARRAY[calls::float8, lo, hi] ORDER BY bucket) AS bands
    FROM bands GROUP BY g
)
SELECT h.g,
       chronicle_latency_percentile(0.5, h.bands) AS p50,
       chronicle_latency_percentile(0.95, h.bands) AS p95,
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM v WHERE v.g = h.g) AS want50,
       (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) FROM v WHERE v.g = h.g)
           AS want95,
       (SELECT max(calls) FROM bands b WHERE b.g = h.g) AS fullest
FROM histograms h
"""


async def test_latency_percentiles_are_within_one_percent_and_exact_in_sparse_bands(
    superuser: asyncpg.Connection,
) -> None:
    rng = random.Random(95)
    groups: list[int] = []
    values: list[float] = []
    for group, size in enumerate([1, 2, 3, 5, 40, 1000, 20_000]):
        for _ in range(size):
            groups.append(group)
            values.append(rng.lognormvariate(7, 1.2) if rng.random() > 0.01 else 0.0)
    dense = 0
    for row in await superuser.fetch(HISTOGRAM_SQL, groups, values):
        for got, want in ((row["p50"], row["want50"]), (row["p95"], row["want95"])):
            assert got == pytest.approx(want, rel=0.01, abs=1e-9), dict(row)
        if row["fullest"] <= 2:
            assert (row["p50"], row["p95"]) == (row["want50"], row["want95"]), dict(row)
        else:
            dense += 1
    assert dense >= 2  # the large groups put many calls in one band
    # two calls in one band: the midpoint, as percentile_cont has it
    two = await superuser.fetchrow(HISTOGRAM_SQL, [0, 0], [100.0, 100.5])
    assert two is not None and (two["p50"], two["p95"]) == (100.25, 100.475)


async def test_the_projection_runner_keeps_the_rollups_refreshed(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="run")], expected_seq=0)
    config = ProjectionsConfig(rollups_interval=0.1)
    async with running_projections(store, all_projections(), config):
        await store.append(session, [LlmCall(model="m", fingerprint="f" * 64, cost_usd=0.5)])
        for _ in range(100):
            counted = await superuser.fetchval(
                "SELECT llm_calls FROM usage_rollup_sessions WHERE session_id = $1", session
            )
            if counted == 1:
                break
            await asyncio.sleep(0.1)
        assert counted == 1
    await _check(superuser)
