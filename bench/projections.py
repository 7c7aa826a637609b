"""Projections benchmark: applying a backlog, live lag, and the session list, in one run.

    python -m bench.projections [--json] [--url URL] [--rounds N] [--only NAME ...]
    (or: chronicle bench projections)

- **backlog**: ``session_state`` rebuilt from the start of a log of BACKLOG_EVENTS events
  (what a new projection, a version bump or ``chronicle projections rebuild`` does), against
  the raw read speed of the same events (a keyset-paged fetch of the same rows, in the same
  pages, on the same server) — interleaved rounds, the ratio is the cost of folding and
  writing.
- **lag**: a runner in another process (bench/projections_follower.py) follows the log while
  100 sessions append twice a second each; lag = from the return of an append to the commit
  of the batch that applied it (CLOCK_MONOTONIC, one clock for both processes).
- **list**: ``recent_sessions`` (what ``chronicle sessions`` runs: the catch-up check, then
  the index-backed list with the claim check) over 100,000 rows of ``session_state``, against
  a raw ``SELECT`` of the same 20 rows, interleaved.

Without --url a throwaway embedded PostgreSQL is started, so your data is never touched.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from app.events.masking import SecretMasker
from app.projections import (
    SessionState,
    rebuild,
)
from app.projections.sql.projection_store import ProjectionConnection
from app.sessions.summary import recent_sessions
from app.store import EventStore
from app.store.config import StoreConfig
from bench.harness import (
    BenchDatabase,
    Measurement,
    Stopwatch,
    bench_arguments,
    command_line,
    interleave,
    measured_on_database,
    percentile,
    ratio_row,
    report,
)

FIGURES = ("backlog", "lag", "list")
FOLLOWER = Path(__file__).resolve().parent / "projections_follower.py"
BACKLOG_SESSIONS = 3_000
#: Events per backlog session (see ``session_events``).
EVENTS_PER_SESSION = 10
BATCH = 2_000
LIVE_SESSIONS = 100
LIVE_RATE = 2.0  # appends per second per session
LIVE_SECONDS = 10.0
LIST_SESSIONS = 100_000
RAW_PAGE_SQL = """
SELECT global_position, session_id, seq, event_id, tx, kind, source, cause, payload,
       schema_version, created_at, hash
FROM events WHERE (tx, global_position) > ($1::xid8, $2::bigint)
ORDER BY tx, global_position LIMIT $3
"""
RAW_LIST_SQL = """
SELECT * FROM session_state ORDER BY created_at DESC, session_id DESC LIMIT 20
"""
FILL_SQL = """
INSERT INTO session_state (session_id, title, created_at, updated_at, status, model,
                           last_seq, cost_usd)
SELECT gen_random_uuid(), 'task ' || n, now() - n * interval '1 second',
       now() - n * interval '1 second',
       (ARRAY['finished', 'working', 'error', 'limit', 'awaiting_user_input'])[1 + n % 5],
       (ARRAY['openai/gpt-4o', 'anthropic/claude-sonnet', 'openai/local'])[1 + n % 3],
       10, 0.01
FROM generate_series(1, $1) AS n
"""
HEAD_SQL = """
UPDATE projections p SET tx = h.tx, global_position = h.global_position
FROM (SELECT tx, global_position FROM events ORDER BY tx DESC, global_position DESC LIMIT 1) h
WHERE p.name = 'session_state'
"""


def _progress(text: str) -> None:
    print(f"  ... {text}", file=sys.stderr, flush=True)


def session_events(n: int) -> list[dict[str, Any]]:
    """A small finished session: ten events of the kinds session_state folds."""
    return [
        {"kind": "session.created", "title": f"task {n}", "config": {"model": "openai/gpt-4o"}},
        {"kind": "message", "content": "fix the bug", "source": "user"},
        {"kind": "agent.state", "state": "running"},
        {
            "kind": "llm.call",
            "model": "openai/gpt-4o",
            "fingerprint": "f",
            "usage": {"prompt_tokens": 1200, "completion_tokens": 80},
            "cost_usd": 0.0042,
        },
        {"kind": "run", "command": "pytest -q"},
        {"kind": "run.output", "output": "1 passed", "exit_code": 0, "cause": 5},
        {
            "kind": "llm.call",
            "model": "openai/gpt-4o",
            "fingerprint": "g",
            "usage": {"prompt_tokens": 1400, "completion_tokens": 20},
            "cost_usd": 0.0038,
        },
        {"kind": "finish", "message": "done"},
        {"kind": "message", "content": "done", "source": "agent"},
        {"kind": "agent.state", "state": "finished"},
    ]


async def backlog(store: EventStore) -> int:
    async def write(start: int) -> None:
        for n in range(start, BACKLOG_SESSIONS, 8):
            await store.append(uuid.uuid4(), session_events(n), expected_seq=0)

    await asyncio.gather(*(write(i) for i in range(8)))
    return BACKLOG_SESSIONS * EVENTS_PER_SESSION


async def raw_read(pool: asyncpg.Pool, total: int) -> float:
    """Events/s of reading the whole log page by page, as the rebuild reads it."""
    read = 0
    tx, position = 0, 0
    with Stopwatch() as watch:
        async with pool.acquire() as connection:
            while rows := await connection.fetch(RAW_PAGE_SQL, tx, position, BATCH):
                read += len(rows)
                tx, position = int(rows[-1]["tx"]), rows[-1]["global_position"]
    assert read == total, (read, total)
    return read / watch.seconds


async def chronicle_rebuild(store: EventStore, total: int) -> float:
    """Events/s of building session_state from the start of the log and swapping it in."""
    with Stopwatch() as watch:
        async with await ProjectionConnection.dedicated(store) as connection:
            await rebuild(store, connection, SessionState(), batch_size=BATCH)
    return total / watch.seconds


def start_follower(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(FOLLOWER), url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


async def live_lag(database: BenchDatabase) -> list[float]:
    """Lags in ms (an append's return to the commit of its batch by a runner in another
    process) while LIVE_SESSIONS sessions append LIVE_RATE times a second each."""
    follower = start_follower(database.app)
    assert follower.stdin is not None and follower.stdout is not None
    try:
        ready = await asyncio.to_thread(follower.stdout.readline)
        assert json.loads(ready) == {"ready": True}, ready
        returned: dict[str, int] = {}
        async with await EventStore.open(
            database.app, config=StoreConfig(pool_max_size=20), masker=SecretMasker()
        ) as writer:

            async def session(offset: float) -> None:
                sid = uuid.uuid4()
                await asyncio.sleep(offset)
                deadline = time.monotonic() + LIVE_SECONDS
                first = True
                while time.monotonic() < deadline:
                    event: dict[str, Any] = (
                        {"kind": "session.created", "title": "live"}
                        if first
                        else {"kind": "message", "content": "tick"}
                    )
                    first = False
                    [recorded] = await writer.append(sid, [event])
                    returned[str(recorded.event_id)] = time.monotonic_ns()
                    await asyncio.sleep(1 / LIVE_RATE)

            interval = 1 / LIVE_RATE / LIVE_SESSIONS
            await asyncio.gather(*(session(i * interval) for i in range(LIVE_SESSIONS)))
        await asyncio.sleep(1.0)
        follower.stdin.write("stop\n")
        follower.stdin.flush()
        answer = json.loads(await asyncio.to_thread(follower.stdout.readline))
    finally:
        if follower.poll() is None:
            follower.terminate()
        await asyncio.to_thread(follower.wait, 10)
    applied = dict(answer["applied"])
    assert set(returned) <= set(applied), "every event is applied"
    return [(applied[e] - sent) / 1e6 for e, sent in returned.items()]


async def list_sessions(store: EventStore) -> float:
    with Stopwatch() as watch:
        found = await recent_sessions(store, 20)
    assert len(found) == 20
    return watch.seconds * 1000


async def raw_list(pool: asyncpg.Pool) -> float:
    with Stopwatch() as watch:
        found = await pool.fetch(RAW_LIST_SQL)
    assert len(found) == 20
    return watch.seconds * 1000


async def run(database: BenchDatabase, rounds: int, only: set[str]) -> list[Measurement]:
    rows: list[Measurement] = []
    config = StoreConfig(pool_max_size=12)
    async with (
        await EventStore.open(database.app, config=config, masker=SecretMasker()) as store,
        asyncpg.create_pool(database.admin, min_size=1, max_size=4) as pool,
    ):
        if "backlog" in only or "lag" in only:
            _progress(f"writing a backlog of {BACKLOG_SESSIONS * EVENTS_PER_SESSION:,} events")
            total = await backlog(store)
        if "backlog" in only:
            _progress("rebuilding session_state from the backlog, against reading it")
            result = await interleave(
                lambda: raw_read(pool, total),
                lambda: chronicle_rebuild(store, total),
                rounds=rounds,
            )
            row = ratio_row(
                f"session_state from a {total:,}-event backlog vs raw read of the same events",
                "events/s",
                result,
                0.0,
            )
            row.target = ">= 20,000/s (ratio reported)"
            row.met = result.chronicle.median >= 20_000
            rows.append(row)
        if "lag" in only:
            _progress(f"live lag, {LIVE_SESSIONS} sessions appending {LIVE_RATE:g}/s each")
            lags = await live_lag(database)
            p99 = percentile(lags, 99)
            rows.append(
                Measurement(
                    name=f"live lag p99, {LIVE_SESSIONS} sessions at {LIVE_RATE:g} appends/s",
                    unit="ms",
                    baseline=None,
                    chronicle=p99,
                    ratio=None,
                    target="p99 <= 50 ms",
                    met=p99 <= 50,
                    detail={
                        "samples": len(lags),
                        "p50": percentile(lags, 50),
                        "p95": percentile(lags, 95),
                        "max": max(lags),
                    },
                )
            )
        if "list" in only:
            _progress(f"the session list over {LIST_SESSIONS:,} sessions")
            await pool.execute("DELETE FROM session_state")
            await pool.execute(FILL_SQL, LIST_SESSIONS)
            await pool.execute(
                "INSERT INTO projections (name, version) VALUES ('session_state', 1) "
                "ON CONFLICT (name) DO NOTHING"
            )
            await pool.execute(HEAD_SQL)
            await pool.execute("ANALYZE session_state")
            result = await interleave(
                lambda: raw_list(pool), lambda: list_sessions(store), rounds=max(rounds, 20)
            )
            rows.append(
                Measurement(
                    name=f"chronicle sessions over {LIST_SESSIONS:,} sessions vs raw SELECT",
                    unit="ms",
                    baseline=result.baseline.median,
                    chronicle=result.chronicle.median,
                    ratio=result.ratio,
                    target="<= 50 ms",
                    met=result.chronicle.median <= 50,
                    baseline_spread=f"{result.baseline.low:.2f}-{result.baseline.high:.2f}",
                    chronicle_spread=f"{result.chronicle.low:.2f}-{result.chronicle.high:.2f}",
                    ratio_spread=f"{result.ratio_low:.2f}-{result.ratio_high:.2f}",
                    detail={"p95": percentile(result.chronicle.values, 95)},
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = bench_arguments(__doc__, rounds=5, figures=FIGURES).parse_args(argv)
    only = set(args.only or FIGURES)
    machine, rows = measured_on_database(args.url, partial(run, rounds=args.rounds, only=only))
    title = "Projections (baselines on the same server, interleaved rounds in one run)"
    how = (
        command_line("projections", args)
        + "; backlog: rebuild of session_state vs a keyset-paged raw fetch of the same events,"
        " alternating, 1 warm-up round; lag: an append's return to the commit of its batch by a"
        " runner in another process; list: recent_sessions (catch-up check included) vs raw"
        " SELECT of the same 20 rows, medians of >= 20 alternating rounds"
    )
    return report("projections", title, rows, as_json=args.json, machine=machine, how=how)


if __name__ == "__main__":
    sys.exit(main())
