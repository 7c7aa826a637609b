"""`chronicle bench NAME`: run a benchmark script from the project's bench/ folder."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.config import Settings

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
#: The benchmarks ``chronicle bench`` runs (scripts of bench/).
BENCHMARKS = (
    "eventstore",
    "runtime",
    "agent",
    "projections",
    "replay",
    "server",
    "ui",
    "gateway",
    "otlp",
)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser("bench", help="run a benchmark (see bench/)")
    bench.add_argument("name", choices=BENCHMARKS)
    bench.add_argument("--json", action="store_true", help="print the results as JSON")
    bench.set_defaults(handler=command)


def command(args: argparse.Namespace, settings: Settings) -> int:
    return run(args.name, as_json=args.json)


def run(name: str, *, as_json: bool) -> int:
    path = BENCH_DIR / f"{name}.py"
    if not path.exists():
        print(f"error: {path} not found; benchmarks run from a source checkout", file=sys.stderr)
        return 1
    if str(BENCH_DIR.parent) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR.parent))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return int(module.main(["--json"] if as_json else []))
