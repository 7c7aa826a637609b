"""The session list's text filter (``GET /api/sessions?q=``) over 100,000 sessions.

``python -m bench.session_search [--rounds N]``: a throwaway migrated database (embedded
PostgreSQL) with 100,000 ``session_state`` rows whose titles are sentences of a 2,000-word
vocabulary (one word in ten rows only, so a word may match 1 % of the sessions or none), one
in ten rows owned by a member. It times the API's own list query (``list_sql`` with the
``words`` filter, first page of 51) as the member and as an admin, for a word that matches
many rows, one that matches 1 %, one that matches none and two words, each with the GIN index
of migration 0013 and without it (dropped and built again between rounds: A B A B). Prints
the median and p99 (ms) of each; writes ``bench/results/session_search.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from app.store.session_rows import list_sql
from bench.harness import BenchDatabase, bench_database

SESSIONS = 100_000
MEMBER_SHARE = 10
QUERIES = {
    "common word (w1, ~1/3 of rows)": "w1",
    "rare word (~1 %)": "rare7",
    "no match": "absent",
    "two words": "w3 rare7",
}
INDEX = (
    "CREATE INDEX session_state_title_words ON session_state "
    "USING gin (to_tsvector('simple'::regconfig, coalesce(title, '')))"
)


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


def timings(database: BenchDatabase, member: uuid.UUID, words: str, owner: bool) -> list[float]:
    sql, params = list_sql(state=None, model=False, since=False, owner=owner, words=True)
    values: dict[str, Any] = {"owner": member, "words": words, "limit": 51}
    args = [values[name] for name in params]
    # psycopg takes %s: number the placeholders as it wants them
    for number in range(len(params), 0, -1):
        sql = sql.replace(f"${number}", "%s")
    found: list[float] = []
    with psycopg.connect(database.app, autocommit=True) as db:
        db.execute(sql, args)  # warm
        for _ in range(20):
            started = time.perf_counter()
            db.execute(sql, args).fetchall()
            found.append((time.perf_counter() - started) * 1000)
    return found


def p99(values: list[float]) -> float:
    return sorted(values)[max(0, round(len(values) * 0.99) - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    member = uuid.uuid4()
    results: dict[str, dict[str, list[float]]] = {}
    with bench_database(None) as database:
        with psycopg.connect(database.admin, autocommit=True) as db:
            db.execute(
                "INSERT INTO users (id, name) VALUES (%s, 'member') ON CONFLICT DO NOTHING",
                (member,),
            )
        seed(database, member)
        for _ in range(args.rounds):
            for indexed in (True, False):
                with psycopg.connect(database.admin, autocommit=True) as db:
                    db.execute("DROP INDEX IF EXISTS session_state_title_words")
                    if indexed:
                        db.execute(INDEX)
                        db.execute("ANALYZE session_state")
                for label, words in QUERIES.items():
                    for owner in (True, False):
                        key = f"{label}, {'member' if owner else 'admin'}"
                        column = "index" if indexed else "no index"
                        results.setdefault(key, {}).setdefault(column, []).extend(
                            timings(database, member, words, owner)
                        )
    print(f"| query ({SESSIONS:,} sessions) | index median / p99 (ms) | no index median / p99 |")
    print("|---|---:|---:|")
    table: dict[str, Any] = {}
    for key, columns in results.items():
        cells = [
            f"{statistics.median(columns[c]):.2f} / {p99(columns[c]):.2f}"
            for c in ("index", "no index")
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
