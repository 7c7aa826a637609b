"""Event store benchmark: Chronicle against raw asyncpg and a peer, interleaved, in one run.

    python -m bench.eventstore [--json] [--url URL] [--rounds N] [--only NAME ...]
    (or: chronicle bench eventstore)

Every figure alternates its baseline and Chronicle in rounds (bench/harness.py: A B, B A, ...),
the first round discarded as warm-up; the table gives medians, the range over the rounds and
the median of the per-round ratios. Baselines: single-row INSERT + COMMIT into an equivalent
table without triggers, hash chain or NOTIFY; COPY for batches; a bare NOTIFY → LISTEN between
two processes; a raw fetch of the same rows; and, as a peer, the pyeventsourcing PostgreSQL
recorder (the optional ``bench`` extra) appending one event per call into its own table.
Without --url a throwaway embedded PostgreSQL is started, so your data is never touched.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg
import orjson

from app.events import Message
from app.events.canonical import canonical_json
from app.events.ids import new_event_id
from app.events.masking import SecretMasker
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

RAW_TABLE = """
CREATE TABLE raw_events (
    global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id uuid NOT NULL, seq integer NOT NULL, event_id uuid NOT NULL UNIQUE,
    tx xid8 NOT NULL DEFAULT pg_current_xact_id(), kind text NOT NULL, source text NOT NULL,
    cause integer, payload jsonb NOT NULL, schema_version smallint NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(), hash bytea NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX ON raw_events (tx, global_position);
"""
RAW_INSERT = (
    "INSERT INTO raw_events (session_id, seq, event_id, kind, source, payload, hash) "
    "VALUES ($1, $2, $3, 'message', 'user', $4::jsonb, $5)"
)
#: The delivery floor's append: a row and its doorbell ("session:seq") in one statement.
FLOOR_APPEND = f"""
WITH row AS ({RAW_INSERT} RETURNING session_id, seq)
SELECT pg_notify('bench_floor', session_id::text || ':' || seq) FROM row
"""
#: Appends per measured sample, by number of concurrent writers.
SINGLE_APPENDS = {1: 800, 8: 2000}
BATCH = 10_000
READ_EVENTS = 100_000
SUBSCRIBER = Path(__file__).resolve().parent / "eventstore_subscriber.py"
FIGURES = ("append", "peer", "batch", "delivery", "read")


def _text(i: int) -> str:
    return f"message number {i} " + "x" * 80


def _payload(i: int) -> str:
    return canonical_json({"content": _text(i)})


def _raw_payload(i: int) -> str:
    """The batch baseline's JSON, made without the code under test (canonical_json is in
    Chronicle's append path: speeding it up must not speed up the baseline too)."""
    return orjson.dumps({"content": _text(i)}).decode()


# -- single-event appends -----------------------------------------------------------------


async def raw_single(pool: asyncpg.Pool, sessions: int, total: int) -> float:
    """events/s of autocommitted single-row inserts from ``sessions`` concurrent writers."""

    async def writer(session: uuid.UUID, n: int) -> None:
        async with pool.acquire() as connection:
            for seq in range(1, n + 1):
                await connection.execute(
                    RAW_INSERT, session, seq, new_event_id(), _payload(seq), b"\0" * 32
                )

    with Stopwatch() as watch:
        await asyncio.gather(*(writer(uuid.uuid4(), total // sessions) for _ in range(sessions)))
    return total / watch.seconds


async def chronicle_single(store: EventStore, sessions: int, total: int) -> float:
    async def writer(session: uuid.UUID, n: int) -> None:
        for seq in range(1, n + 1):
            await store.append(session, [Message(content=_text(seq))], expected_seq=seq - 1)

    with Stopwatch() as watch:
        await asyncio.gather(*(writer(uuid.uuid4(), total // sessions) for _ in range(sessions)))
    return total / watch.seconds


class Peer:
    """pyeventsourcing's PostgreSQL application recorder (psycopg 3, its own pool and table),
    one event per ``insert_events`` call, from ``writers`` threads."""

    def __init__(self, url: str) -> None:
        from urllib.parse import parse_qs, unquote, urlsplit

        from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

        parts = urlsplit(url)
        query = parse_qs(parts.query)
        self.datastore = PostgresDatastore(
            dbname=parts.path.lstrip("/"),
            host=query.get("host", [parts.hostname or "localhost"])[0],
            port=query.get("port", [str(parts.port or 5432)])[0],
            user=unquote(parts.username or "postgres"),
            password=unquote(parts.password or ""),
            pool_size=8,
        )
        self.recorder = PostgresApplicationRecorder(self.datastore, events_table_name="peer")
        self.recorder.create_table()

    def _writer(self, n: int) -> None:
        from eventsourcing.persistence import StoredEvent

        originator = uuid.uuid4()
        for version in range(1, n + 1):
            event = StoredEvent(originator, version, "bench:Message", _payload(version).encode())
            self.recorder.insert_events([event])

    async def single(self, writers: int, total: int) -> float:
        with Stopwatch() as watch:
            await asyncio.gather(
                *(asyncio.to_thread(self._writer, total // writers) for _ in range(writers))
            )
        return total / watch.seconds

    def close(self) -> None:
        self.datastore.close()


# -- batches and reads --------------------------------------------------------------------


async def raw_copy(pool: asyncpg.Pool, n: int) -> float:
    session = uuid.uuid4()
    with Stopwatch() as watch:
        records = [
            (session, seq, new_event_id(), "message", "user", _raw_payload(seq), b"\0" * 32)
            for seq in range(1, n + 1)
        ]
        async with pool.acquire() as connection:
            await connection.copy_records_to_table(
                "raw_events",
                records=records,
                columns=["session_id", "seq", "event_id", "kind", "source", "payload", "hash"],
            )
    return n / watch.seconds


async def chronicle_batch(store: EventStore, n: int) -> float:
    session = uuid.uuid4()
    with Stopwatch() as watch:
        events = [Message(content=_text(i)) for i in range(n)]
        await store.append(session, events, expected_seq=0)
    return n / watch.seconds


async def long_session(store: EventStore) -> uuid.UUID:
    session = uuid.uuid4()
    for start in range(0, READ_EVENTS, BATCH):
        events = [Message(content=f"event {start + i} " + "y" * 60) for i in range(BATCH)]
        await store.append(session, events, expected_seq=start)
    return session


async def raw_read(pool: asyncpg.Pool, session: uuid.UUID) -> float:
    with Stopwatch() as watch:
        rows = await pool.fetch(
            "SELECT * FROM events WHERE session_id = $1 AND seq > 0 ORDER BY seq", session
        )
    assert len(rows) == READ_EVENTS
    return READ_EVENTS / watch.seconds


async def chronicle_read(store: EventStore, session: uuid.UUID) -> float:
    with Stopwatch() as watch:
        events = await store.read(session)
    assert len(events) == READ_EVENTS
    return READ_EVENTS / watch.seconds


# -- delivery to another process ----------------------------------------------------------


class Subscriber:
    """bench/eventstore_subscriber.py in a process of its own, driven over its stdin."""

    def __init__(self, url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SUBSCRIBER), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    async def ask(self, **command: Any) -> dict[str, Any]:
        def exchange() -> dict[str, Any]:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
            answer: dict[str, Any] = json.loads(self.process.stdout.readline())
            return answer

        return await asyncio.to_thread(exchange)

    async def close(self) -> None:
        """``exit`` has no answer: the process ends."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": "exit"}) + "\n")
        self.process.stdin.close()
        await asyncio.to_thread(self.process.wait, 10)


class Latencies:
    """Milliseconds from the return of the send (append, or pg_notify) to the other process."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.per_round_p99: list[float] = []

    def add_round(self, sent: dict[str, int], arrivals: list[list[Any]]) -> None:
        values = [(ns - sent[key]) / 1e6 for key, ns in arrivals if key in sent]
        self.values.extend(values)
        if values:
            self.per_round_p99.append(percentile(values, 99))


async def _paced(
    sessions: int,
    seconds: float,
    send: Callable[[int, int], Awaitable[str]],
    interval: float | None = None,
) -> dict[str, int]:
    """Each of ``sessions`` sends every ``interval`` seconds (by default every 5 ms for one
    session, twice a second for more; 0: back to back, as concurrent writers do), for
    ``seconds``; returns when each send returned (monotonic ns), by key."""
    if interval is None:
        interval = 0.005 if sessions == 1 else 0.5
    sent: dict[str, int] = {}
    deadline = time.monotonic() + seconds

    async def sender(index: int) -> None:
        await asyncio.sleep(random.random() * interval)
        count = 0
        while time.monotonic() < deadline:
            key = await send(index, count)
            sent[key] = time.monotonic_ns()
            count += 1
            await asyncio.sleep(interval)

    await asyncio.gather(*(sender(i) for i in range(sessions)))
    await asyncio.sleep(0.3)  # the last arrivals
    return sent


class Delivered(NamedTuple):
    """Latencies of one delivery case: the bare doorbell, the hand-written floor, Chronicle."""

    raw: Latencies
    floor: Latencies
    ours: Latencies


async def delivery(
    database: BenchDatabase,
    store: EventStore,
    sessions: int,
    rounds: int,
    seconds: float,
    interval: float | None = None,
) -> Delivered:
    """Raw NOTIFY → LISTEN, the floor (INSERT + NOTIFY → LISTEN + SELECT, hand-written) and
    append → ``subscribe`` in another process, in rotating rounds of ``seconds``, each session
    sending every ``interval`` (``_paced``); the first round of each is warm-up."""
    subscriber = Subscriber(database.app)
    measured = Delivered(Latencies(), Latencies(), Latencies())
    sender = await asyncpg.create_pool(database.app, min_size=2, max_size=8)
    floor_sender = await asyncpg.create_pool(database.admin, min_size=2, max_size=8)
    try:
        ids = [uuid.uuid4() for _ in range(sessions)]
        for session in ids:
            await store.append(session, [Message(content="start")], expected_seq=0)
        await subscriber.ask(op="listen", channel="bench")
        await subscriber.ask(op="listen_read", channel="bench_floor", url=database.admin)
        await subscriber.ask(op="subscribe", sessions=[str(s) for s in ids])
        heads = dict.fromkeys(range(sessions), 1)
        floor_ids = [uuid.uuid4() for _ in range(sessions)]
        floor_heads = dict.fromkeys(range(sessions), 0)

        async def notify(_index: int, _count: int) -> str:
            key = uuid.uuid4().hex
            await sender.execute("SELECT pg_notify('bench', $1)", key)
            return key

        async def floor(index: int, count: int) -> str:
            event_id = new_event_id()
            floor_heads[index] += 1
            await floor_sender.execute(
                FLOOR_APPEND,
                floor_ids[index],
                floor_heads[index],
                event_id,
                _payload(count),
                b"\0" * 32,
            )
            return str(event_id)

        async def append(index: int, _count: int) -> str:
            event = Message(content="ping")
            await store.append(ids[index], [event], expected_seq=heads[index])
            heads[index] += 1
            return str(event.event_id)

        sides = [(measured.raw, notify), (measured.floor, floor), (measured.ours, append)]
        for index in range(rounds + 1):
            order = sides[index % 3 :] + sides[: index % 3]  # each side first in turn
            for side, send in order:
                await subscriber.ask(op="collect")
                sent = await _paced(sessions, seconds, send, interval)
                arrivals = (await subscriber.ask(op="collect"))["arrivals"]
                if index > 0:
                    side.add_round(sent, arrivals)
        await subscriber.ask(op="unsubscribe")
    finally:
        await sender.close()
        await floor_sender.close()
        await subscriber.close()
    return measured


def latency_rows(label: str, raw: Latencies, ours: Latencies) -> list[Measurement]:
    rows = []
    for pct in (50, 95, 99, 100):
        value = percentile(ours.values, pct)
        name = "max" if pct == 100 else f"p{pct}"
        target = "<= 5 ms" if pct == 99 else "-"
        rows.append(
            Measurement(
                name=f"append → subscriber in another process {name}, {label}",
                unit="ms",
                baseline=percentile(raw.values, pct),
                chronicle=value,
                ratio=None,
                target=target,
                met=value <= 5 if pct == 99 else True,
                chronicle_spread=(
                    f"p99 per round {min(ours.per_round_p99):.2f}-{max(ours.per_round_p99):.2f}"
                    if pct == 99 and ours.per_round_p99
                    else ""
                ),
                detail={"samples": len(ours.values), "baseline_samples": len(raw.values)},
            )
        )
    return rows


def floor_row(label: str, measured: Delivered) -> Measurement:
    """Chronicle's p99 next to the least a subscriber that reads the table can do here: a
    row and its doorbell in one statement, a bare LISTEN, a plain SELECT of the session's new
    rows (bench/eventstore_subscriber.py, ``listen_read``). What the doorbell alone takes is
    the rows above; what reading the table costs on this machine, at this load, is this."""
    floor = percentile(measured.floor.values, 99)
    ours = percentile(measured.ours.values, 99)
    return Measurement(
        name=(
            f"append → subscriber p99, {label}: against INSERT + NOTIFY → LISTEN + SELECT, "
            "hand-written"
        ),
        unit="ms",
        baseline=floor,
        chronicle=ours,
        ratio=ours / floor if floor > 0 else None,
        target="-",
        met=True,
        baseline_spread=(
            f"p99 per round {min(measured.floor.per_round_p99):.2f}-"
            f"{max(measured.floor.per_round_p99):.2f}"
            if measured.floor.per_round_p99
            else ""
        ),
        detail={
            "floor_p50": percentile(measured.floor.values, 50),
            "floor_max": percentile(measured.floor.values, 100),
            "floor_samples": len(measured.floor.values),
        },
    )


# -- the run ------------------------------------------------------------------------------


def _progress(text: str) -> None:
    print(f"  ... {text}", file=sys.stderr, flush=True)


async def run(database: BenchDatabase, rounds: int, only: set[str]) -> list[Measurement]:
    config = StoreConfig(pool_max_size=12)
    rows: list[Measurement] = []
    async with (
        await EventStore.open(database.app, config=config, masker=SecretMasker()) as store,
        asyncpg.create_pool(database.admin, min_size=1, max_size=12) as pool,
    ):
        await pool.execute(RAW_TABLE)
        if "append" in only:
            for sessions in (1, 8):
                _progress(f"single appends, {sessions} session(s)")
                total = SINGLE_APPENDS[sessions]
                result = await interleave(
                    partial(raw_single, pool, sessions, total),
                    partial(chronicle_single, store, sessions, total),
                    rounds=rounds,
                )
                rows.append(
                    ratio_row(
                        f"single-event append, {sessions} session(s), vs INSERT + COMMIT",
                        "events/s",
                        result,
                        0.7,
                    )
                )
        if "peer" in only and importlib.util.find_spec("eventsourcing") is None:
            _progress("pyeventsourcing not installed (pip install '.[bench]'): no peer row")
        elif "peer" in only:
            peer = Peer(database.admin)
            try:
                for writers in (1, 8):
                    _progress(f"pyeventsourcing recorder, {writers} writer(s)")
                    total = SINGLE_APPENDS[writers]
                    result = await interleave(
                        partial(peer.single, writers, total),
                        partial(chronicle_single, store, writers, total),
                        rounds=rounds,
                    )
                    rows.append(
                        ratio_row(
                            f"single-event append, {writers} writer(s), vs pyeventsourcing",
                            "events/s",
                            result,
                            2.0,
                        )
                    )
            finally:
                peer.close()
        if "batch" in only:
            _progress("10,000-event batches")
            result = await interleave(
                lambda: raw_copy(pool, BATCH), lambda: chronicle_batch(store, BATCH), rounds=rounds
            )
            rows.append(ratio_row("10,000-event batch append vs COPY", "events/s", result, 0.5))
        if "delivery" in only:
            # 1 session every 5 ms, 100 sessions twice a second each, and 8 writers appending
            # back to back (each to a session of its own), as the three cases.
            for label, sessions, interval in (
                ("1 session(s)", 1, None),
                ("100 session(s)", 100, None),
                ("8 concurrent writers", 8, 0.0),
            ):
                _progress(f"delivery to another process, {label}")
                # One session sends at most every 5 ms plus its append: longer rounds, so
                # the pooled samples reach 2,000 even on a loaded machine.
                seconds = 4.0 if sessions == 1 else 2.5
                measured = await delivery(database, store, sessions, rounds, seconds, interval)
                rows.extend(latency_rows(label, measured.raw, measured.ours))
                rows.append(floor_row(label, measured))
        if "read" in only:
            _progress("reading one 100,000-event session")
            session = await long_session(store)
            result = await interleave(
                lambda: raw_read(pool, session),
                lambda: chronicle_read(store, session),
                rounds=rounds,
            )
            row = ratio_row("read one 100,000-event session vs raw fetch", "events/s", result, 0.8)
            row.target = ">= 150,000/s and >= 0.8x"
            row.met = result.chronicle.median >= 150_000 and result.ratio >= 0.8
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = bench_arguments(__doc__, rounds=7, figures=FIGURES).parse_args(argv)
    only = set(args.only or FIGURES)
    machine, rows = measured_on_database(args.url, partial(run, rounds=args.rounds, only=only))
    title = "Event store (baselines on the same server, interleaved rounds in one run)"
    how = (
        command_line("eventstore", args)
        + f"; {args.rounds} measured rounds after 1 warm-up, baseline and Chronicle alternating;"
        " medians, ranges over the rounds, ratio = median of per-round ratios; latencies pooled"
        " over the rounds from the return of the send to the other process"
    )
    return report("eventstore", title, rows, as_json=args.json, machine=machine, how=how)


if __name__ == "__main__":
    sys.exit(main())
