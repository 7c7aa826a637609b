"""The ways of sending one single-event append, each interleaved with raw INSERT + COMMIT.

    python -m bench.append_candidates [--url URL] [--rounds N]

What issue 9 asked to measure before choosing (README, "What made append fast"): the array
function ``chronicle_append`` against the scalar ``chronicle_append_one``, the NOTIFY inside
the append's transaction against one sent after the commit on a second connection (the
listening one, as the store's announcer does), at 1 and 8 concurrent writers. Every candidate
runs as the application's login on its own connection per writer, at the SQL level, so the
figures are the database's and the protocol's cost, not the store's Python.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from app.events.ids import new_event_id
from bench.eventstore import RAW_INSERT, RAW_TABLE, SINGLE_APPENDS, _payload
from bench.harness import (
    Measurement,
    Stopwatch,
    bench_database,
    interleave,
    ratio_row,
    report,
    this_machine,
)

ARRAYS = (
    "SELECT * FROM chronicle_append($1, $2, $3, '{message}', '{user}', '{NULL}', $4, '{1}', $5)"
)
SCALAR = (
    "SELECT * FROM chronicle_append_one($1, $2, $3, 'message', 'user', NULL, $4, 1::smallint, $5)"
)

#: One append: (connection, the listening connection, session, seq) → awaited.
Append = Callable[[asyncpg.Connection, asyncpg.Connection, uuid.UUID, int], Awaitable[None]]


async def _raw(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.execute(RAW_INSERT, s, seq, new_event_id(), _payload(seq), b"\0" * 32)


async def _arrays_after(
    c: asyncpg.Connection, listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetch(ARRAYS, s, seq - 1, [new_event_id()], [_payload(seq)], False)
    await listening.execute("SELECT pg_notify('chronicle_events', $1)", f"{s}:{seq}")


async def _arrays_in_tx(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetch(ARRAYS, s, seq - 1, [new_event_id()], [_payload(seq)], True)


async def _scalar_after(
    c: asyncpg.Connection, listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetchrow(SCALAR, s, seq - 1, new_event_id(), _payload(seq), False)
    await listening.execute("SELECT pg_notify('chronicle_events', $1)", f"{s}:{seq}")


async def _scalar_in_tx(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetchrow(SCALAR, s, seq - 1, new_event_id(), _payload(seq), True)


async def _scalar_no_notify(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.fetchrow(SCALAR, s, seq - 1, new_event_id(), _payload(seq), False)


CANDIDATES: dict[str, Append] = {
    "chronicle_append (arrays), NOTIFY after the commit (2 round trips)": _arrays_after,
    "chronicle_append (arrays), NOTIFY in its transaction": _arrays_in_tx,
    "chronicle_append_one (scalars), NOTIFY after the commit (2 round trips)": _scalar_after,
    "chronicle_append_one (scalars), NOTIFY in its transaction": _scalar_in_tx,
    "chronicle_append_one (scalars), no NOTIFY (floor, not a candidate)": _scalar_no_notify,
}


class Writers:
    """One connection per writer and one shared listening connection, opened once."""

    def __init__(self, connections: list[asyncpg.Connection], listening: asyncpg.Connection):
        self.connections = connections
        self.listening = listening
        self._lock = asyncio.Lock()  # one statement at a time on the listening connection

    async def rate(self, append: Append, writers: int, total: int) -> float:
        listening = _Locked(self.listening, self._lock)

        async def writer(connection: asyncpg.Connection) -> None:
            session = uuid.uuid4()
            for seq in range(1, total // writers + 1):
                await append(connection, listening, session, seq)  # type: ignore[arg-type]

        with Stopwatch() as watch:
            await asyncio.gather(*(writer(c) for c in self.connections[:writers]))
        return total / watch.seconds


class _Locked:
    """The listening connection, one statement at a time (asyncpg allows no overlap)."""

    def __init__(self, connection: asyncpg.Connection, lock: asyncio.Lock) -> None:
        self._connection = connection
        self._lock = lock

    async def execute(self, query: str, *args: object) -> str:
        async with self._lock:
            result: str = await self._connection.execute(query, *args)
            return result


async def run(admin_url: str, app_url: str, rounds: int) -> list[Measurement]:
    setup = await asyncpg.connect(admin_url)
    await setup.execute(RAW_TABLE)
    await setup.execute("GRANT INSERT, SELECT ON raw_events TO chronicle_app")
    postgres = await setup.fetchval("SHOW server_version")
    await setup.close()
    connections = [await asyncpg.connect(app_url) for _ in range(8)]
    writers = Writers(connections, await asyncpg.connect(app_url))
    rows = []
    try:
        for name, append in CANDIDATES.items():
            for count in (1, 8):
                print(f"  ... {name}, {count} writer(s)", file=sys.stderr, flush=True)
                total = SINGLE_APPENDS[count]
                result = await interleave(
                    partial(writers.rate, _raw, count, total),
                    partial(writers.rate, append, count, total),
                    rounds=rounds,
                )
                rows.append(ratio_row(f"{name}, {count} writer(s)", "events/s", result, 0.7))
    finally:
        for connection in [*connections, writers.listening]:
            await connection.close()
    rows[0].detail["postgres"] = postgres
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="PostgreSQL server to use (a throwaway database is made)")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per candidate")
    args = parser.parse_args(argv)
    with bench_database(args.url) as database:
        rows = asyncio.run(run(database.admin, database.app, args.rounds))
    machine = this_machine(str(rows[0].detail.get("postgres")))
    how = (
        f"python -m bench.append_candidates --rounds {args.rounds}; each candidate interleaved"
        " with raw INSERT + COMMIT (1 warm-up round discarded), one connection per writer"
    )
    title = "Single-event append candidates (SQL level, baseline = raw INSERT + COMMIT)"
    report("append_candidates", title, rows, as_json=False, machine=machine, how=how)
    return 0


if __name__ == "__main__":
    sys.exit(main())
