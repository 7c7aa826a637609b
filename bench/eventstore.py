"""Event store benchmark: Chronicle against raw asyncpg on the same server, in one run.

    python -m bench.eventstore [--json] [--url URL]     (or: chronicle bench eventstore)

Baselines: single-row INSERT + COMMIT into an equivalent table without triggers, hash chain
or NOTIFY; COPY for batches; a bare LISTEN/NOTIFY round trip; a raw fetch of the same rows.
Without --url a throwaway embedded PostgreSQL is started, so your data is never touched.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from app.config import Settings
from app.events import Message
from app.events.canonical import canonical_json
from app.events.ids import new_event_id
from app.store import EventStore
from bench.harness import (
    Measurement,
    Stopwatch,
    median,
    percentile,
    report,
    throwaway_database,
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
SINGLE_APPENDS = 1500
BATCH = 10_000
READ_EVENTS = 100_000


def _payload(i: int) -> str:
    return canonical_json({"content": f"message number {i} " + "x" * 80})


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
            await store.append(
                session,
                [Message(content=f"message number {seq} " + "x" * 80)],
                expected_seq=seq - 1,
            )

    with Stopwatch() as watch:
        await asyncio.gather(*(writer(uuid.uuid4(), total // sessions) for _ in range(sessions)))
    return total / watch.seconds


async def raw_copy(pool: asyncpg.Pool, n: int) -> float:
    session = uuid.uuid4()
    with Stopwatch() as watch:
        records = [
            (session, seq, new_event_id(), "message", "user", _payload(seq), b"\0" * 32)
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
        events = [Message(content=f"message number {i} " + "x" * 80) for i in range(n)]
        await store.append(session, events, expected_seq=0)
    return n / watch.seconds


async def raw_notify_latency(url: str, samples: int) -> list[float]:
    """Milliseconds from pg_notify() on one connection to the callback on another."""
    listener = await asyncpg.connect(url)
    sender = await asyncpg.connect(url)
    arrived: asyncio.Queue[float] = asyncio.Queue()
    await listener.add_listener("bench", lambda *_: arrived.put_nowait(time.perf_counter()))
    latencies = []
    for _ in range(samples):
        start = time.perf_counter()
        await sender.execute("SELECT pg_notify('bench', 'x')")
        latencies.append((await arrived.get() - start) * 1000)
    await listener.close()
    await sender.close()
    return latencies


async def delivery_latency(
    url: str, settings: Settings, sessions: int, seconds: float
) -> list[float]:
    """Milliseconds from calling append to the event reaching a subscriber of another store.

    Writer and readers use separate stores (pools and listening connections), so delivery
    goes through PostgreSQL's NOTIFY exactly as it does between processes.
    """
    async with (
        await EventStore.open(
            url, config=settings.store_config(), masker=settings.masker()
        ) as writer,
        await EventStore.open(
            url, config=settings.store_config(), masker=settings.masker()
        ) as reader,
    ):
        ids = [uuid.uuid4() for _ in range(sessions)]
        sent: dict[uuid.UUID, float] = {}
        latencies: list[float] = []
        stop = asyncio.Event()

        warm_until = time.perf_counter() + 1.0  # connections prepared, plans cached

        async def subscribe(session: uuid.UUID) -> None:
            async with reader.subscribe(session) as stream:
                async for event in stream:
                    start = sent.pop(event.event_id)
                    if start > warm_until:
                        latencies.append((time.perf_counter() - start) * 1000)

        # One session appends every 5 ms; with 100 sessions each appends twice a second
        # (200 events/s in all, several times what 100 agents waiting on a model produce).
        interval = 0.005 if sessions == 1 else 0.5

        async def write(session: uuid.UUID) -> None:
            seq = 0
            await asyncio.sleep(random.random() * interval)
            while not stop.is_set():
                event = Message(content="ping")
                sent[event.event_id] = time.perf_counter()
                await writer.append(session, [event], expected_seq=seq)
                seq += 1
                await asyncio.sleep(interval)

        readers = [asyncio.create_task(subscribe(s)) for s in ids]
        await asyncio.sleep(0.2)
        writers = [asyncio.create_task(write(s)) for s in ids]
        await asyncio.sleep(seconds + 1.0)
        stop.set()
        await asyncio.gather(*writers)
        await asyncio.sleep(0.2)
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        return latencies


async def read_throughput(store: EventStore, pool: asyncpg.Pool) -> tuple[float, float]:
    session = uuid.uuid4()
    for start in range(0, READ_EVENTS, BATCH):
        events = [Message(content=f"event {start + i} " + "y" * 60) for i in range(BATCH)]
        await store.append(session, events, expected_seq=start)
    raw, ours = [], []
    for _ in range(3):
        with Stopwatch() as watch:
            rows = await pool.fetch(
                "SELECT * FROM events WHERE session_id = $1 AND seq > 0 ORDER BY seq", session
            )
        assert len(rows) == READ_EVENTS
        raw.append(READ_EVENTS / watch.seconds)
        with Stopwatch() as watch:
            events = await store.read(session)
        assert len(events) == READ_EVENTS
        ours.append(READ_EVENTS / watch.seconds)
    return median(raw), median(ours)


def ratio_row(name: str, unit: str, base: float, ours: float, minimum: float) -> Measurement:
    ratio = ours / base
    return Measurement(
        name=name,
        unit=unit,
        baseline=base,
        chronicle=ours,
        ratio=ratio,
        target=f">= {minimum}x baseline",
        met=ratio >= minimum,
    )


async def run(url: str) -> list[Measurement]:
    settings = Settings(pool_max_size=12)
    rows: list[Measurement] = []
    async with (
        await EventStore.open(
            url, config=settings.store_config(), masker=settings.masker()
        ) as store,
        asyncpg.create_pool(url, min_size=1, max_size=12) as pool,
    ):
        await pool.execute(RAW_TABLE)

        def progress(text: str) -> None:
            print(f"  ... {text}", file=sys.stderr, flush=True)

        for sessions in (1, 8):
            progress(f"single appends, {sessions} session(s)")
            base = median([await raw_single(pool, sessions, SINGLE_APPENDS) for _ in range(3)])
            ours = median(
                [await chronicle_single(store, sessions, SINGLE_APPENDS) for _ in range(3)]
            )
            rows.append(
                ratio_row(
                    f"single-event append, {sessions} session(s)", "events/s", base, ours, 0.7
                )
            )

        progress("10,000-event batches")
        base = median([await raw_copy(pool, BATCH) for _ in range(5)])
        ours = median([await chronicle_batch(store, BATCH) for _ in range(5)])
        rows.append(ratio_row("10,000-event batch append (vs COPY)", "events/s", base, ours, 0.3))

        progress("delivery latency")
        notify = await raw_notify_latency(url, 300)
        for sessions in (1, 100):
            latencies = await delivery_latency(url, settings, sessions, 3.0)
            for pct in (50, 99):
                value = percentile(latencies, pct)
                rows.append(
                    Measurement(
                        name=f"append→subscriber p{pct}, {sessions} active session(s)",
                        unit="ms",
                        baseline=percentile(notify, pct),
                        chronicle=value,
                        ratio=None,
                        target="<= 5 ms" if pct == 99 and sessions == 100 else "-",
                        met=value <= 5 if pct == 99 else True,
                    )
                )

        progress("reading one 100,000-event session")
        base, ours = await read_throughput(store, pool)
        rows.append(
            Measurement(
                name="read one long session",
                unit="events/s",
                baseline=base,
                chronicle=ours,
                ratio=ours / base,
                target=">= 100,000 events/s",
                met=ours >= 100_000,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--url", help="PostgreSQL server to use (a throwaway database is made)")
    args = parser.parse_args(argv)
    with throwaway_database(args.url) as url:
        rows = asyncio.run(run(url))
    title = "Event store (baseline = raw asyncpg on the same server, same run)"
    return report("eventstore", title, rows, as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
