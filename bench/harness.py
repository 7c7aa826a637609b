"""Shared benchmark plumbing: interleaved rounds, the machine, a throwaway PostgreSQL, the
command line, the table.

A shared 2-core machine is noisy: a neighbour's test run can halve a measurement for a few
seconds. So a baseline and Chronicle are never measured one after the other in blocks; they
alternate in rounds (A B A B ...), the first rounds are discarded as warm-up, and each side
is reported as the median of its rounds with the spread (lowest and highest) beside it. A
ratio is the median of the per-round ratios, each taken between two neighbouring
measurements, so a slow minute hurts both sides of a round alike.

    result = await interleave(raw_fn, chronicle_fn, rounds=7, warmup=1)
    result.baseline.median, result.chronicle.spread, result.ratio

Each function measures one sample and returns it (a rate, or a latency: the caller knows
which way is better).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

RESULTS_DIR = Path(__file__).resolve().parent / "results"


class Samples(BaseModel):
    """The kept samples of one side (warm-up removed), with their median and spread."""

    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def spread(self) -> float:
        """(highest - lowest) / median: how much the rounds disagree."""
        return (self.high - self.low) / self.median if self.median else 0.0


class Interleaved(BaseModel):
    """Baseline and Chronicle measured alternately in the same rounds."""

    baseline: Samples
    chronicle: Samples
    #: chronicle / baseline of each round (neighbouring measurements).
    ratios: list[float]

    @property
    def ratio(self) -> float:
        """The median of the per-round ratios."""
        return statistics.median(self.ratios)

    @property
    def ratio_low(self) -> float:
        return min(self.ratios)

    @property
    def ratio_high(self) -> float:
        return max(self.ratios)


async def interleave(
    baseline: Callable[[], Awaitable[float]],
    chronicle: Callable[[], Awaitable[float]],
    *,
    rounds: int = 7,
    warmup: int = 1,
) -> Interleaved:
    """Run ``baseline`` and ``chronicle`` alternately, ``warmup + rounds`` times each.

    The order within a round alternates too (A B, B A, A B ...), so neither side always runs
    on a cache the other warmed. The first ``warmup`` rounds are run and thrown away.
    """
    if rounds < 1:
        raise ValueError("at least one measured round")
    base: list[float] = []
    ours: list[float] = []
    for index in range(warmup + rounds):
        if index % 2 == 0:
            a = await baseline()
            b = await chronicle()
        else:
            b = await chronicle()
            a = await baseline()
        if index >= warmup:
            base.append(a)
            ours.append(b)
    return Interleaved(
        baseline=Samples(values=base),
        chronicle=Samples(values=ours),
        ratios=[b / a if a else 0.0 for a, b in zip(base, ours, strict=True)],
    )


async def rounds_of(
    measure: Callable[[], Awaitable[float]], *, rounds: int = 7, warmup: int = 1
) -> Samples:
    """One side alone, in rounds (for a figure without a baseline)."""
    values = []
    for index in range(warmup + rounds):
        value = await measure()
        if index >= warmup:
            values.append(value)
    return Samples(values=values)


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


class Stopwatch:
    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


# -- the machine --------------------------------------------------------------------------


class Machine(BaseModel):
    """Where a benchmark ran: printed above its table and saved with its results."""

    cpu: str
    cores: int
    kernel: str
    python: str
    postgres: str | None = None
    load_before: tuple[float, float, float]

    def line(self) -> str:
        pg = f", PostgreSQL {self.postgres}" if self.postgres else ""
        load = ", ".join(f"{x:.2f}" for x in self.load_before)
        return (
            f"{self.cpu}, {self.cores} cores, Linux {self.kernel}, Python {self.python}{pg}; "
            f"load average before the run {load}"
        )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def this_machine(postgres: str | None = None) -> Machine:
    return Machine(
        cpu=_cpu_model(),
        cores=os.cpu_count() or 1,
        kernel=platform.release(),
        python=platform.python_version(),
        postgres=postgres,
        load_before=os.getloadavg(),
    )


# -- a throwaway database -----------------------------------------------------------------


class BenchDatabase(BaseModel):
    """A migrated database for one run: as the superuser (baselines, setup) and as the
    application's login (what Chronicle runs with in production)."""

    admin: str
    app: str


def _with_database(url: str, name: str) -> str:
    scheme, _, rest = url.partition("://")
    before, _, query = rest.partition("?")
    return f"{scheme}://{before.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


@contextmanager
def bench_database(url: str | None) -> Iterator[BenchDatabase]:
    """A migrated database: on ``url``'s server if given (a superuser's URL), else in a
    temporary embedded server. Dropped afterwards."""
    import uuid

    import psycopg

    from app.store import migrate
    from app.store.embedded import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="chronicle-bench-") as root:
        server = None
        app_url: str | None = None
        if url is None:
            server = EmbeddedPostgres(Path(root))
            urls = server.ensure_running()
            url, app_url = urls.admin, urls.app
        name = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        db_url = _with_database(url, name)
        try:
            migrate.upgrade(db_url)
            yield BenchDatabase(
                admin=db_url, app=_with_database(app_url, name) if app_url else db_url
            )
        finally:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            if server is not None:
                server.stop()


@contextmanager
def throwaway_database(url: str | None) -> Iterator[str]:
    """``bench_database``, as its superuser's URL."""
    with bench_database(url) as database:
        yield database.admin


def postgres_version(url: str) -> str:
    """The server's version, for the machine line."""
    import psycopg

    with psycopg.connect(url) as connection:
        row = connection.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "unknown"


def measured_on_database(
    url: str | None, run: Callable[[BenchDatabase], Coroutine[Any, Any, list[Measurement]]]
) -> tuple[Machine, list[Measurement]]:
    """``run`` on a throwaway migrated database (``bench_database``), and the machine it ran on
    (the server's version included)."""
    with bench_database(url) as database:
        machine = this_machine(postgres_version(database.admin))
        rows = asyncio.run(run(database))
    return machine, rows


# -- the command line ---------------------------------------------------------------------


def bench_arguments(
    doc: str | None, *, rounds: int | None = None, figures: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """The options the database benchmarks share: --json and --url; --rounds when the
    benchmark measures in rounds (``rounds`` is its default); --only when it has ``figures``."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--url", help="PostgreSQL server to use (a throwaway database is made)")
    if rounds is not None:
        parser.add_argument("--rounds", type=int, default=rounds, help="measured rounds per figure")
    if figures:
        parser.add_argument("--only", nargs="+", choices=figures, help="measure only these figures")
    return parser


def command_line(name: str, args: argparse.Namespace) -> str:
    """How the run was started (its rounds and figures), for the table's "how" line."""
    line = f"python -m bench.{name} --rounds {args.rounds}"
    only = getattr(args, "only", None)
    return line + (f" --only {' '.join(sorted(set(only)))}" if only else "")


# -- the table ----------------------------------------------------------------------------


class Measurement(BaseModel):
    """One row: Chronicle next to its baseline from the same run, and the target."""

    name: str
    unit: str
    baseline: float | None
    chronicle: float
    ratio: float | None
    target: str
    met: bool
    #: "low-high" of each side over the measured rounds, and of the ratio.
    baseline_spread: str = ""
    chronicle_spread: str = ""
    ratio_spread: str = ""
    #: Anything else worth keeping (percentiles, sample counts).
    detail: dict[str, Any] = {}


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def _range(low: float, high: float) -> str:
    return f"{_number(low)}-{_number(high)}"


def ratio_row(
    name: str, unit: str, result: Interleaved, minimum: float, *, target: str | None = None
) -> Measurement:
    """A row for a rate measured in interleaved rounds: met when the median ratio is."""
    return Measurement(
        name=name,
        unit=unit,
        baseline=result.baseline.median,
        chronicle=result.chronicle.median,
        ratio=result.ratio,
        target=target or f">= {minimum}x",
        met=result.ratio >= minimum,
        baseline_spread=_range(result.baseline.low, result.baseline.high),
        chronicle_spread=_range(result.chronicle.low, result.chronicle.high),
        ratio_spread=f"{result.ratio_low:.2f}-{result.ratio_high:.2f}",
        detail={
            "rounds": len(result.ratios),
            "baseline_samples": result.baseline.values,
            "chronicle_samples": result.chronicle.values,
            "ratios": result.ratios,
        },
    )


def markdown_table(rows: list[Measurement]) -> str:
    lines = [
        "| measurement | baseline (median, range) | chronicle (median, range) | ratio (range) "
        "| target | met |",
        "|---|---:|---:|---:|---|---|",
    ]
    for row in rows:
        base = "-"
        if row.baseline is not None:
            base = _number(row.baseline) + (
                f" ({row.baseline_spread})" if row.baseline_spread else ""
            )
        ours = _number(row.chronicle) + (
            f" ({row.chronicle_spread})" if row.chronicle_spread else ""
        )
        ratio = "-"
        if row.ratio is not None:
            ratio = f"{row.ratio:.2f}x" + (f" ({row.ratio_spread})" if row.ratio_spread else "")
        lines.append(
            f"| {row.name} ({row.unit}) | {base} | {ours} | {ratio} | {row.target} | "
            f"{'yes' if row.met else 'no'} |"
        )
    return "\n".join(lines)


def save_results(name: str, rows: list[Measurement], extra: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps({"rows": [r.model_dump() for r in rows], **extra}, indent=2))
    return path


def report(
    name: str,
    title: str,
    rows: list[Measurement],
    *,
    as_json: bool,
    extra: dict[str, Any] | None = None,
    machine: Machine | None = None,
    how: str = "",
) -> int:
    """Save the results, print them (a table, or JSON), and exit 0 only if every target is met."""
    extra = dict(extra or {})
    if machine is not None:
        extra["machine"] = machine.model_dump()
    if how:
        extra["how"] = how
    path = save_results(name, rows, extra)
    if as_json:
        print(json.dumps({"rows": [row.model_dump() for row in rows], **extra}, indent=2))
    else:
        print(f"\n{title}\n")
        if machine is not None:
            print(f"machine: {machine.line()}")
        if how:
            print(f"how: {how}")
        print()
        print(markdown_table(rows))
        for key, value in extra.items():
            if value and key not in ("machine", "how"):
                print(f"\n{key}: {value}")
        print(f"\nresults: {path}")
    return 0 if all(row.met for row in rows) else 1
