"""Scale benchmark: the same figures at 1M and at 10M events, and how much they grow.

    chronicle bench scale [--json] [--sizes 1M,10M] [--dir DIR] [--reuse] [--rounds N]
    (or: python -m bench.scale ...)

Each size is a database of generated sessions (``scale_shape``: 100 events a session on
average, so 10k sessions at 1M and 100k at 10M, owned in turn by ten members) written through
the store's import path and verified whole before anything is measured (``scale_load``). The
databases live in an embedded PostgreSQL of their own under ``--dir`` (default: the system's
temporary directory); with ``--reuse`` a size already generated with the same shape is kept,
since 10M takes a while. Without it every size is generated afresh.

Figures, each through the code the application runs: a single-event append into an existing
session (``EventStore.append``) p50/p99; the session list's first page (the API's query,
``list_visible_records``) p99 for an admin (every session) and for a member who owns 10% of
them; one session's read (``EventStore.read``) p50/p99; ``verify`` (``EventStore.verify``)
events/s over a sample of sessions; ``daily_usage`` and ``session_costs`` read whole (the
analytics views, as `chronicle export` reads them); a rebuild of the ``session_state``
projection (``app.projections.rebuild``); the database's size per million events.

Every size is measured in each round, the order alternating (A B, B A, ...), the first round
thrown away as warm-up; the table gives each size's median and the median of the per-round
ratios against the smallest size. The goal is flat: each within 1.5x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg
import psycopg
from pydantic import BaseModel

from app.events import Message
from app.events.masking import SecretMasker
from app.projections import projection_named, rebuild
from app.projections.config import ProjectionsConfig
from app.projections.sql.projection_store import ProjectionConnection
from app.sessions.sql.session_owners import list_visible_records
from app.store import EventStore, migrate
from app.store.analytics import refresh_usage_rollups
from app.store.analytics.views import view_query
from app.store.config import StoreConfig
from app.store.embedded import EmbeddedPostgres
from app.store.urls import asyncpg_dsn
from bench.harness import percentile, postgres_version, this_machine
from bench.scale_load import load, user_ids, verify_all
from bench.scale_shape import Shape
from bench.scale_table import Figure, ScaleRow, markdown, parse_sizes, ratio_rows, size_label

EVENTS_PER_SESSION = 100
#: Appends per size and round (``--samples``); lists of each kind and reads are 30% of it.
#: A p99 of 200 samples is the second largest, and moved by one slow sample between runs;
#: of 1,000 it is the tenth.
APPENDS = 1_000
VERIFIED_SESSIONS = 20
#: Sessions the quick figures pick from (at random, the same ones every round).
SAMPLE_SESSIONS = 2_000
FIGURES = {
    "append_p50": Figure(name="single-event append p50", unit="ms"),
    "append_p99": Figure(name="single-event append p99", unit="ms"),
    "list_admin_p99": Figure(name="session list, admin, p99", unit="ms"),
    "list_member_p99": Figure(name="session list, member with 10%, p99", unit="ms"),
    "read_p50": Figure(name="one session's read p50", unit="ms"),
    "read_p99": Figure(name="one session's read p99", unit="ms"),
    "verify": Figure(name="verify, sessions not read before", unit="events/s", better="higher"),
    "verify_warm": Figure(name="verify, the same again", unit="events/s", better="higher"),
    "daily_usage": Figure(name="daily_usage, whole", unit="s"),
    "session_costs": Figure(name="session_costs, whole", unit="s"),
    "session_costs_row": Figure(name="session_costs, per session", unit="µs"),
    "rebuild": Figure(name="session_state rebuild", unit="s"),
    "rebuild_rate": Figure(name="session_state rebuild", unit="events/s", better="higher"),
    "size": Figure(name="database size per million events", unit="MB"),
}
QUICK = ("append", "list", "read", "verify")
HEAVY = ("analytics", "rebuild")


def say(text: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def shape_of(events: int) -> Shape:
    return Shape(sessions=max(1, events // EVENTS_PER_SESSION), events=events)


class Generated(BaseModel):
    """What a size's marker file records: the shape it was made with and how it went."""

    shape: Shape
    generate_seconds: float
    verify_seconds: float


def _with_database(url: str, name: str) -> str:
    scheme, _, rest = url.partition("://")
    before, _, query = rest.partition("?")
    return f"{scheme}://{before.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


@dataclass
class SizeData:
    label: str
    shape: Shape
    owner_url: str
    app_url: str
    analyst_url: str
    generated: Generated
    store: EventStore | None = None
    sessions: list[uuid.UUID] = field(default_factory=list)
    last_seq: dict[uuid.UUID, int] = field(default_factory=dict)
    #: appends per round; lists of each kind and reads are 30% of it
    samples: int = APPENDS

    @property
    def lookups(self) -> int:
        return max(1, self.samples * 3 // 10)


def prepare(
    server_urls: Any, directory: Path, events: int, *, reuse: bool, workers: int
) -> SizeData:
    """The size's database: reused if asked and generated with the same shape, else made
    afresh (generated, then verified whole)."""
    label = size_label(events)
    shape = shape_of(events)
    name = f"scale_{label.lower().replace('.', '_')}"
    marker = directory / f"{name}.json"
    owner_url = _with_database(server_urls.admin, name)
    app_url = _with_database(server_urls.app, name)
    analyst_url = _with_database(server_urls.analyst, name)
    if reuse and marker.exists():
        generated = Generated.model_validate_json(marker.read_text())
        if generated.shape == shape:
            say(f"{label}: reusing {name} (generated in {generated.generate_seconds:,.0f} s)")
            migrate.upgrade(owner_url)
            return SizeData(label, shape, owner_url, app_url, analyst_url, generated)
        say(f"{label}: {name} was made with another shape; generating it again")
    marker.unlink(missing_ok=True)
    with psycopg.connect(server_urls.admin, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    migrate.upgrade(owner_url)
    say(f"{label}: generating {shape.sessions:,} sessions, {events:,} events ({workers} workers)")
    generate = load(owner_url, shape, workers, say)
    say(f"{label}: generated in {generate:,.0f} s ({events / generate:,.0f} events/s)")
    with psycopg.connect(owner_url, autocommit=True) as owner:
        owner.execute("VACUUM ANALYZE")
    checked = verify_all(app_url, events, workers, say)
    say(f"{label}: every session verifies ({events / checked:,.0f} events/s)")
    generated = Generated(shape=shape, generate_seconds=generate, verify_seconds=checked)
    marker.write_text(generated.model_dump_json())
    return SizeData(label, shape, owner_url, app_url, analyst_url, generated)


# -- the figures -----------------------------------------------------------------------------


async def _timed(operation: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await operation()
    return (time.perf_counter() - started) * 1000


async def appends(data: SizeData, rng: random.Random) -> dict[str, float]:
    store = data.store
    assert store is not None
    times = []
    for number in range(data.samples):
        session = rng.choice(data.sessions)
        seq = data.last_seq[session]
        event = Message(content=f"a follow-up question, number {number}: what changed?")
        started = time.perf_counter()
        await store.append(session, [event], expected_seq=seq)
        times.append((time.perf_counter() - started) * 1000)
        data.last_seq[session] = seq + 1
    return {"append_p50": percentile(times, 50), "append_p99": percentile(times, 99)}


async def lists(data: SizeData, rng: random.Random) -> dict[str, float]:
    store = data.store
    assert store is not None
    _, members = user_ids(data.shape)
    admin = [
        await _timed(lambda: list_visible_records(store, owner=None, limit=51))
        for _ in range(data.lookups)
    ]
    member = [
        await _timed(lambda: list_visible_records(store, owner=members[0], limit=51))
        for _ in range(data.lookups)
    ]
    return {"list_admin_p99": percentile(admin, 99), "list_member_p99": percentile(member, 99)}


async def reads(data: SizeData, rng: random.Random) -> dict[str, float]:
    store = data.store
    assert store is not None
    times = [
        await _timed(lambda: store.read(rng.choice(data.sessions))) for _ in range(data.lookups)
    ]
    return {"read_p50": percentile(times, 50), "read_p99": percentile(times, 99)}


async def verifies(data: SizeData, rng: random.Random) -> dict[str, float]:
    """``verify`` over a new sample of sessions each round, then over the same sample again.
    The first pass reads what the round has not read yet: at 10M that is the disk's speed
    for the sessions' pages and their prompt messages (the 1M database stays in memory), so
    the second pass, in memory at both sizes, is verify's own cost."""
    store = data.store
    assert store is not None
    sample = rng.sample(data.sessions, min(VERIFIED_SESSIONS, len(data.sessions)))
    out = {}
    for figure in ("verify", "verify_warm"):
        checked = 0
        started = time.perf_counter()
        for session in sample:
            report = await store.verify(session)
            if not report.ok:
                raise RuntimeError(
                    f"{data.label}: session {session} does not verify: {report.reason}"
                )
            checked += report.checked
        out[figure] = checked / (time.perf_counter() - started)
    return out


async def analytics(data: SizeData, rng: random.Random) -> dict[str, float]:
    """Each view read whole, as the read-only analyst (as `chronicle export --view` does),
    with the usage rollups refreshed first as a projection runner keeps them. session_costs
    has a row per session (ten times as many at 10M): its time per row is a figure too."""
    assert data.store is not None
    await refresh_usage_rollups(data.store)
    out = {}
    connection = await asyncpg.connect(asyncpg_dsn(data.analyst_url))
    try:
        for name in ("daily_usage", "session_costs"):
            sql, args = view_query(name)
            started = time.perf_counter()
            rows = await connection.fetch(sql, *args)
            out[name] = time.perf_counter() - started
            if not rows:
                raise RuntimeError(f"{data.label}: {name} is empty")
            if name == "session_costs":
                out["session_costs_row"] = out[name] / len(rows) * 1e6
    finally:
        await connection.close()
    return out


async def rebuilds(data: SizeData, rng: random.Random) -> dict[str, float]:
    store = data.store
    assert store is not None
    projection = projection_named("session_state")
    batch = ProjectionsConfig().batch_size
    started = time.perf_counter()
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, projection, batch_size=batch)
    seconds = time.perf_counter() - started
    events = await store.pool.fetchval("SELECT count(*) FROM events")
    return {"rebuild": seconds, "rebuild_rate": events / seconds}


MEASURES: dict[str, Callable[[SizeData, random.Random], Awaitable[dict[str, float]]]] = {
    "append": appends,
    "list": lists,
    "read": reads,
    "verify": verifies,
    "analytics": analytics,
    "rebuild": rebuilds,
}


async def in_rounds(
    sizes: list[SizeData], parts: list[str], rounds: int, warmup: int, seed: int
) -> dict[str, dict[str, list[float]]]:
    """figure -> size label -> one value per kept round; sizes alternate order by round."""
    samples: dict[str, dict[str, list[float]]] = {}
    rngs = {data.label: random.Random(seed) for data in sizes}
    for index in range(warmup + rounds):
        order = sizes if index % 2 == 0 else sizes[::-1]
        for data in order:
            for part in parts:
                say(f"round {index + 1}/{warmup + rounds}: {part} at {data.label}")
                found = await MEASURES[part](data, rngs[data.label])
                if index < warmup:
                    continue
                for name, value in found.items():
                    samples.setdefault(name, {d.label: [] for d in sizes})[data.label].append(value)
    return samples


async def _open(data: SizeData) -> None:
    config = StoreConfig(pool_max_size=4).long_running()
    data.store = await EventStore.open(data.app_url, masker=SecretMasker(), config=config)
    rows = await data.store.pool.fetch(
        "SELECT id, last_seq FROM sessions WHERE last_seq > 0 ORDER BY id"
    )
    picked = random.Random(len(rows)).sample(rows, min(SAMPLE_SESSIONS, len(rows)))
    # The usage rollups as a projection runner keeps them: a database generated (or
    # migrated) since their last refresh counts its model calls into them once, here.
    started = time.perf_counter()
    refreshed = await refresh_usage_rollups(data.store)
    if refreshed.counted:
        say(
            f"{data.label}: usage rollups counted {refreshed.counted:,} model calls in "
            f"{time.perf_counter() - started:.1f} s"
        )
    data.sessions = [row["id"] for row in picked]
    data.last_seq = {row["id"]: row["last_seq"] for row in picked}


def schema_versions(sizes: list[SizeData]) -> dict[str, str]:
    """Each database's migration (a reused one is migrated to this checkout's head first)."""
    out = {}
    for data in sizes:
        with psycopg.connect(data.owner_url) as connection:
            row = connection.execute("SELECT version_num FROM chronicle_schema_version").fetchone()
        out[data.label] = str(row[0]) if row else "unknown"
    return out


def database_sizes(sizes: list[SizeData]) -> dict[str, float]:
    out = {}
    for data in sizes:
        with psycopg.connect(data.owner_url) as connection:
            row = connection.execute(
                "SELECT pg_database_size(current_database()), count(*) FROM events"
            ).fetchone()
        assert row is not None
        out[data.label] = row[0] / 1e6 / (row[1] / 1e6)
    return out


async def measure(
    sizes: list[SizeData], rounds: int, heavy_rounds: int, only: list[str]
) -> dict[str, dict[str, list[float]]]:
    for data in sizes:
        await _open(data)
    try:
        # The rebuild first: the session list reads the projection it builds.
        heavy = [part for part in HEAVY if part in only]
        quick = [part for part in QUICK if part in only]
        samples: dict[str, dict[str, list[float]]] = {}
        if "rebuild" in heavy:
            samples.update(await in_rounds(sizes, ["rebuild"], heavy_rounds, 0, seed=1))
        if "analytics" in heavy:
            samples.update(await in_rounds(sizes, ["analytics"], heavy_rounds, 1, seed=2))
        if quick:
            samples.update(await in_rounds(sizes, quick, rounds, 1, seed=3))
        return samples
    finally:
        for data in sizes:
            if data.store is not None:
                await data.store.close()


def _memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--sizes", default="1M,10M", help="events per database (default 1M,10M)")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "chronicle-scale",
        help="where the benchmark's PostgreSQL and its databases live",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="keep a size already generated with the same shape"
    )
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds of quick figures")
    parser.add_argument(
        "--heavy-rounds", type=int, default=1, help="rounds of the analytics and the rebuild"
    )
    parser.add_argument(
        "--only", nargs="+", choices=(*QUICK, *HEAVY), default=[*QUICK, *HEAVY],
        help="measure only these figures",
    )  # fmt: skip
    parser.add_argument(
        "--samples", type=int, default=APPENDS,
        help=f"appends per size and round (default {APPENDS}); lists and reads are 30%% of it",
    )  # fmt: skip
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    try:
        sizes = parse_sizes(args.sizes)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(sizes) < 2:
        print("error: name two sizes or more (the first is the base)", file=sys.stderr)
        return 2
    if args.rounds < 1 or args.heavy_rounds < 1:
        print("error: at least one round", file=sys.stderr)
        return 2
    if args.samples < 1:
        print("error: at least one sample", file=sys.stderr)
        return 2
    directory = args.dir.expanduser().resolve()
    directory.mkdir(parents=True, exist_ok=True)
    server = EmbeddedPostgres(directory / "server")
    urls = server.ensure_running()
    try:
        return _run(args, directory, urls, sizes)
    finally:
        server.stop()  # the data stays for --reuse; the next run starts the server again


def _run(args: argparse.Namespace, directory: Path, urls: Any, sizes: list[int]) -> int:
    machine = this_machine(postgres_version(urls.admin))
    data = [
        # a process per core, but not for a tiny size (a process costs a second to start)
        prepare(urls, directory, n, reuse=args.reuse, workers=min(args.workers, 1 + n // 100_000))
        for n in sizes
    ]
    for size in data:
        size.samples = args.samples
    samples = asyncio.run(measure(data, args.rounds, args.heavy_rounds, args.only))
    samples["size"] = {label: [value] for label, value in database_sizes(data).items()}
    rows: list[ScaleRow] = []
    for key, figure in FIGURES.items():
        if key in samples:
            rows.extend(ratio_rows(figure, samples[key]))
    how = (
        f"chronicle bench scale --sizes {','.join(size_label(n) for n in sizes)} "
        f"--rounds {args.rounds} --heavy-rounds {args.heavy_rounds}"
        + (f" --only {' '.join(args.only)}" if set(args.only) != {*QUICK, *HEAVY} else "")
    )
    extra = {
        "machine": machine.model_dump(),
        "memory_gib": round(_memory_gib(), 1),
        "how": how,
        "schema": schema_versions(data),
        "generated": {
            d.label: {
                "sessions": d.shape.sessions,
                "events": d.shape.events,
                "generate_seconds": d.generated.generate_seconds,
                "verify_all_events_per_second": d.shape.events / d.generated.verify_seconds,
            }
            for d in data
        },
    }
    # Beside the databases it measured (a test's tiny run leaves bench/results alone).
    path = directory / "results.json"
    path.write_text(json.dumps({"rows": [r.model_dump() for r in rows], **extra}, indent=2))
    if args.json:
        print(json.dumps({"rows": [r.model_dump() for r in rows], **extra}, indent=2))
    else:
        print(f"\nChronicle at {' and '.join(d.label for d in data)} events\n")
        print(f"machine: {machine.line()}; {extra['memory_gib']} GiB")
        print(f"how: {how}; schema {extra['schema']}\n")
        print(markdown(rows))
        for d in data:
            g = extra["generated"][d.label]  # type: ignore[index]
            print(
                f"\n{d.label}: {g['sessions']:,} sessions; generated in "
                f"{g['generate_seconds']:,.0f} s; whole log verified at "
                f"{g['verify_all_events_per_second']:,.0f} events/s"
            )
        print(f"\nresults: {path}")
    return 0 if all(row.met for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
