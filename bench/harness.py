"""Shared benchmark plumbing: a throwaway PostgreSQL, timing helpers, the results table."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

RESULTS_DIR = Path(__file__).resolve().parent / "results"


class Measurement(BaseModel):
    """One row: Chronicle next to its baseline from the same run, and the target."""

    name: str
    unit: str
    baseline: float | None
    chronicle: float
    ratio: float | None
    target: str
    met: bool


@contextmanager
def throwaway_database(url: str | None) -> Iterator[str]:
    """A migrated database: on ``url``'s server if given, else in a temporary embedded server."""
    import uuid

    import psycopg

    from app.store import migrate
    from app.store.embedded import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="chronicle-bench-") as root:
        server = None
        if url is None:
            server = EmbeddedPostgres(Path(root))
            url = server.start()
        name = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        scheme, _, rest = url.partition("://")
        before, _, query = rest.partition("?")
        db_url = f"{scheme}://{before.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")
        try:
            migrate.upgrade(db_url)
            yield db_url
        finally:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            if server is not None:
                server.stop()


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(samples: list[float]) -> float:
    return statistics.median(samples)


class Stopwatch:
    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def print_table(title: str, rows: list[Measurement]) -> None:
    print(f"\n{title}\n")
    header = (
        f"| {'measurement':<62} | {'baseline':>12} | {'chronicle':>12} | {'ratio':>6} "
        f"| {'target':<20} | met |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for row in rows:
        base = f"{row.baseline:,.1f}" if row.baseline is not None else "-"
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
        print(
            f"| {row.name + ' (' + row.unit + ')':<62} | {base:>12} | {row.chronicle:>12,.1f} | "
            f"{ratio:>6} | {row.target:<20} | {'yes' if row.met else 'NO':<3} |"
        )


def save_results(name: str, rows: list[Measurement], extra: dict) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps({"rows": [r.model_dump() for r in rows], **extra}, indent=2))
    return path


def report(
    name: str, title: str, rows: list[Measurement], *, as_json: bool, extra: dict | None = None
) -> int:
    """Save the results, print them (a table, or JSON), and exit 0 only if every target is met."""
    path = save_results(name, rows, extra or {})
    if as_json:
        print(json.dumps([row.model_dump() for row in rows], indent=2))
    else:
        print_table(title, rows)
        for key, value in (extra or {}).items():
            if value:
                print(f"\n{key}: {value}")
        print(f"\nresults: {path}")
    return 0 if all(row.met for row in rows) else 1
