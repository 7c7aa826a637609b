"""The session list's text filter (``GET /api/sessions?q=``) over 100,000 sessions.

``python -m bench.session_search [--rounds N]``: a throwaway migrated database (embedded
PostgreSQL) with 100,000 ``session_state`` rows whose titles are sentences of a 2,000-word
vocabulary (one word in ten rows only, so a word may match 1 % of the sessions or none), one
in ten rows owned by a member. It times the API's own list path (``list_visible_records``
with the ``words`` filter, first page of 51: the newest rows first, the title index if the
page did not fill) against the single query it replaced (``list_sql`` with ``words``: the
planner's choice, which reads every match of a common word through the GIN index of
migration 0013 and sorts them), as the member and as an admin, for a word in ~45 % of the
titles, one in 1 %, one in none and two words; the two alternate (A B A B) within each round.
Prints the median and p99 (ms) of each; writes ``bench/results/session_search.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from app.events.masking import SecretMasker
from app.sessions.sql.session_owners import list_visible_records
from app.sessions.sql.session_rows import list_sql
from app.store import EventStore
from app.store.config import StoreConfig
from bench.harness import BenchDatabase, bench_database

SESSIONS = 100_000
MEMBER_SHARE = 10
QUERIES = {
    "common word (w1, ~45 % of rows)": "w1",
    "a word in ~14 %": "w3",
    "rare word (~1 %)": "rare7",
    "no match": "absent",
    "two words": "w3 rare7",
}
PAGE = 50
STEERED = "steered (newest rows first)"
SINGLE = "single query (before)"


def seed(database: BenchDatabase, member: uuid.UUID) -> None:
    with psycopg.connect(database.admin, autocommit=True) as db:
        db.execute(
            """
            INSERT INTO session_state (session_id, title, created_at, updated_at, status,
                agent_state, agent, model, runtime, steps, last_seq)
            SELECT gen_random_uuid(),
                   'Fix w' || (i %% 3) || ' in module' || (i %% 2000) || ' and w' || (i %% 7)
                       || CASE WHEN i %% 10 = 0 THEN ' rare' || (i %% 1000) ELSE '' END,
                   now() - i * interval '1 second', now(), 'finished', 'finished',
                   'codeact', 'openai/bench', 'local', 10, 40
            FROM generate_series(1, %s) AS i
            """,
            (SESSIONS,),
        )
        db.execute(
            """
            INSERT INTO session_owners (session_id, user_id, created_at)
            SELECT session_id, %s, created_at FROM session_state
            WHERE ('x' || substr(md5(session_id::text), 1, 8))::bit(32)::int %% %s = 0
            """,
            (member, MEMBER_SHARE),
        )
        db.execute("ANALYZE session_state")
        db.execute("ANALYZE session_owners")


async def timings(
    store: EventStore, member: uuid.UUID, words: str, owner: bool, steered: bool
) -> list[float]:
    """20 first pages of 51 (asked as the API asks: 52), after one to warm up."""
    sql, params = list_sql(state=None, model=False, since=False, owner=owner, words=True)
    values: dict[str, Any] = {"owner": member, "words": words, "limit": PAGE + 1}

    async def page() -> object:
        if steered:
            return await list_visible_records(
                store, owner=member if owner else None, limit=PAGE + 1, words=words
            )
        return await store.pool.fetch(sql, *(values[name] for name in params))

    await page()
    found: list[float] = []
    for _ in range(20):
        started = time.perf_counter()
        await page()
        found.append((time.perf_counter() - started) * 1000)
    return found


def p99(values: list[float]) -> float:
    return sorted(values)[max(0, round(len(values) * 0.99) - 1)]


async def measure(database: BenchDatabase, member: uuid.UUID, rounds: int) -> dict[str, Any]:
    results: dict[str, dict[str, list[float]]] = {}
    async with await EventStore.open(
        database.app, config=StoreConfig(), masker=SecretMasker()
    ) as store:
        for _ in range(rounds):
            for label, words in QUERIES.items():
                for owner in (True, False):
                    key = f"{label}, {'member' if owner else 'admin'}"
                    for column, steered in ((STEERED, True), (SINGLE, False)):
                        results.setdefault(key, {}).setdefault(column, []).extend(
                            await timings(store, member, words, owner, steered)
                        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    member = uuid.uuid4()
    with bench_database(None) as database:
        with psycopg.connect(database.admin, autocommit=True) as db:
            db.execute(
                "INSERT INTO users (id, name) VALUES (%s, 'member') ON CONFLICT DO NOTHING",
                (member,),
            )
        seed(database, member)
        results = asyncio.run(measure(database, member, args.rounds))
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"| query ({SESSIONS:,} sessions) | {STEERED} median / p99 (ms) | {SINGLE} |")
    print("|---|---:|---:|")
    table: dict[str, Any] = {}
    for key, columns in results.items():
        cells = [
            f"{statistics.median(columns[c]):.2f} / {p99(columns[c]):.2f}"
            for c in (STEERED, SINGLE)
        ]
        table[key] = {
            c: {"median": statistics.median(v), "p99": p99(v)} for c, v in columns.items()
        }
        print(f"| {key} | {cells[0]} | {cells[1]} |")
    out = Path(__file__).parent / "results" / "session_search.json"
    out.write_text(json.dumps(table, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
