"""The ways of sending one single-event append, each interleaved with raw INSERT + COMMIT.

    python -m bench.append_candidates [--url URL] [--rounds N]

What issue 9 asked to measure before choosing (README, "What made append fast"): the array
function ``chronicle_append`` against the scalar ``chronicle_append_one``, the NOTIFY inside
the append's transaction against one sent after the commit on a second connection (the
listening one, as the store's announcer does), at 1 and 8 concurrent writers. Every candidate
runs as the application's login on its own connection per writer, at the SQL level, so the
figures are the database's and the protocol's cost, not the store's Python.

Floors, not candidates, measured the same way: a raw INSERT with a ``pg_notify`` in the same
statement (PostgreSQL's notify lock, no Chronicle code), ``chronicle_append_one`` without any
NOTIFY; and for a 10,000-event batch against COPY into the raw table: COPY into ``events``
itself (its indexes and checks, no function), an INSERT ... SELECT from arrays into ``events``
without the hash chain, and ``chronicle_append`` (the chain, as the store sends a batch).
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
from bench.eventstore import BATCH, RAW_INSERT, RAW_TABLE, SINGLE_APPENDS, _payload
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

RAW_INSERT_NOTIFY = (
    "WITH inserted AS (" + RAW_INSERT + " RETURNING seq) "
    "SELECT pg_notify('chronicle_events', $6) FROM inserted"
)
BATCH_COLUMNS = ["session_id", "seq", "event_id", "kind", "source", "payload", "hash"]
#: The batch as the store sends it (the chain computed in the function).
BATCH_APPEND = "SELECT count(*) FROM chronicle_append($1, 0, $2, $3, $4, $5, $6, $7, false)"
#: The same rows into events without the chain (a placeholder hash): the table's own cost.
BATCH_INSERT_NO_CHAIN = """
INSERT INTO events (session_id, seq, event_id, kind, source, cause, payload, schema_version,
                    created_at, hash)
SELECT $1, t.ord::integer, t.event_id, 'message', 'user', NULL, t.payload::jsonb, 1, now(),
       sha256(t.event_id::text::bytea)
FROM unnest($2::uuid[], $3::text[]) WITH ORDINALITY AS t(event_id, payload, ord)
"""

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


async def _raw_notify_in_tx(
    c: asyncpg.Connection, _listening: asyncpg.Connection, s: uuid.UUID, seq: int
) -> None:
    await c.execute(
        RAW_INSERT_NOTIFY, s, seq, new_event_id(), _payload(seq), b"\0" * 32, f"{s}:{seq}"
    )


CANDIDATES: dict[str, Append] = {
    "chronicle_append (arrays), NOTIFY after the commit (2 round trips)": _arrays_after,
    "chronicle_append (arrays), NOTIFY in its transaction": _arrays_in_tx,
    "chronicle_append_one (scalars), NOTIFY after the commit (2 round trips)": _scalar_after,
    "chronicle_append_one (scalars), NOTIFY in its transaction": _scalar_in_tx,
    "chronicle_append_one (scalars), no NOTIFY (floor, not a candidate)": _scalar_no_notify,
    "raw INSERT + pg_notify in the same statement (floor: the notify lock)": _raw_notify_in_tx,
}


def _batch_rows(session: uuid.UUID) -> list[tuple[object, ...]]:
    return [
        (session, seq, new_event_id(), "message", "user", _payload(seq), b"\0" * 32)
        for seq in range(1, BATCH + 1)
    ]


async def copy_raw(admin: asyncpg.Connection) -> float:
    """events/s of COPY into the raw table (the batch baseline of bench/eventstore.py)."""
    with Stopwatch() as watch:
        await admin.copy_records_to_table(
            "raw_events", records=_batch_rows(uuid.uuid4()), columns=BATCH_COLUMNS
        )
    return BATCH / watch.seconds


async def copy_events(admin: asyncpg.Connection) -> float:
    """COPY straight into ``events`` (as the superuser): its indexes and checks, no function."""
    with Stopwatch() as watch:
        rows = [(*row[:6], bytes(32)) for row in _batch_rows(uuid.uuid4())]
        await admin.copy_records_to_table("events", records=rows, columns=BATCH_COLUMNS)
    return BATCH / watch.seconds


async def insert_no_chain(admin: asyncpg.Connection) -> float:
    with Stopwatch() as watch:
        ids = [new_event_id() for _ in range(BATCH)]
        payloads = [_payload(seq) for seq in range(1, BATCH + 1)]
        await admin.execute(BATCH_INSERT_NO_CHAIN, uuid.uuid4(), ids, payloads)
    return BATCH / watch.seconds


async def append_batch(app: asyncpg.Connection) -> float:
    with Stopwatch() as watch:
        ids = [new_event_id() for _ in range(BATCH)]
        payloads = [_payload(seq) for seq in range(1, BATCH + 1)]
        await app.fetchval(
            BATCH_APPEND,
            uuid.uuid4(),
            ids,
            ["message"] * BATCH,
            ["user"] * BATCH,
            [None] * BATCH,
            payloads,
            [1] * BATCH,
        )
    return BATCH / watch.seconds


BATCH_FLOORS: dict[str, Callable[[asyncpg.Connection, asyncpg.Connection], Awaitable[float]]] = {
    "COPY into events itself (floor: the table)": lambda admin, _app: copy_events(admin),
    "INSERT ... SELECT into events, no chain (floor)": lambda admin, _app: insert_no_chain(admin),
    "chronicle_append, 10,000 events (the chain)": lambda _admin, app: append_batch(app),
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


async def run(
    admin_url: str, app_url: str, rounds: int, only: str | None = None
) -> list[Measurement]:
    setup = await asyncpg.connect(admin_url)
    await setup.execute(RAW_TABLE)
    await setup.execute("GRANT INSERT, SELECT ON raw_events TO chronicle_app")
    postgres = await setup.fetchval("SHOW server_version")
    connections = [await asyncpg.connect(app_url) for _ in range(8)]
    writers = Writers(connections, await asyncpg.connect(app_url))
    rows = []
    try:
        for name, floor in BATCH_FLOORS.items():
            if only and only not in name:
                continue
            print(f"  ... {name}", file=sys.stderr, flush=True)
            result = await interleave(
                partial(copy_raw, setup),
                partial(floor, setup, connections[0]),
                rounds=rounds,
            )
            rows.append(ratio_row(f"{name}, vs COPY", "events/s", result, 0.5))
        for name, append in CANDIDATES.items():
            if only and only not in name:
                continue
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
        for connection in [*connections, writers.listening, setup]:
            await connection.close()
    rows[0].detail["postgres"] = postgres
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="PostgreSQL server to use (a throwaway database is made)")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per candidate")
    parser.add_argument("--only", help="only the candidates and floors whose name has this text")
    args = parser.parse_args(argv)
    with bench_database(args.url) as database:
        rows = asyncio.run(run(database.admin, database.app, args.rounds, args.only))
    machine = this_machine(str(rows[0].detail.get("postgres")))
    how = (
        f"python -m bench.append_candidates --rounds {args.rounds}; each candidate interleaved"
        " with raw INSERT + COMMIT or COPY (1 warm-up round discarded), one connection per writer"
    )
    title = (
        "Append candidates and floors (SQL level; baseline raw INSERT + COMMIT, COPY for batches)"
    )
    report("append_candidates", title, rows, as_json=False, machine=machine, how=how)
    return 0


if __name__ == "__main__":
    sys.exit(main())
