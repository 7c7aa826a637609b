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
    "scale",
)
#: Options only ``scale`` takes (its databases are generated, and kept with --reuse).
SCALE_OPTIONS = ("sizes", "dir", "reuse", "rounds", "heavy_rounds", "samples")


def add_parsers(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser("bench", help="run a benchmark (see bench/)")
    bench.add_argument("name", choices=BENCHMARKS)
    bench.add_argument("--json", action="store_true", help="print the results as JSON")
    bench.add_argument("--sizes", help="scale: events per database, e.g. 1M,10M")
    bench.add_argument("--dir", help="scale: where its PostgreSQL and databases live")
    bench.add_argument(
        "--reuse", action="store_true", help="scale: keep the databases already generated"
    )
    bench.add_argument("--rounds", type=int, help="scale: measured rounds of the quick figures")
    bench.add_argument(
        "--heavy-rounds", type=int, help="scale: rounds of the analytics and the rebuild"
    )
    bench.add_argument(
        "--samples", type=int, help="scale: appends per size and round (lists and reads: 30%%)"
    )
    bench.set_defaults(handler=command)


def command(args: argparse.Namespace, settings: Settings) -> int:
    given = [name for name in SCALE_OPTIONS if getattr(args, name) not in (None, False)]
    if given and args.name != "scale":
        option = given[0].replace("_", "-")
        print(f"error: --{option} is an option of `chronicle bench scale` only", file=sys.stderr)
        return 2
    options = [] if args.sizes is None else ["--sizes", args.sizes]
    options += [] if args.dir is None else ["--dir", args.dir]
    options += ["--reuse"] if args.reuse else []
    options += [] if args.rounds is None else ["--rounds", str(args.rounds)]
    options += [] if args.heavy_rounds is None else ["--heavy-rounds", str(args.heavy_rounds)]
    options += [] if args.samples is None else ["--samples", str(args.samples)]
    return run(args.name, as_json=args.json, options=options)


def run(name: str, *, as_json: bool, options: list[str] | None = None) -> int:
    path = BENCH_DIR / f"{name}.py"
    if not path.exists():
        print(f"error: {path} not found; benchmarks run from a source checkout", file=sys.stderr)
        return 1
    if str(BENCH_DIR.parent) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR.parent))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass or pickle looks its module up by name
    spec.loader.exec_module(module)
    return int(module.main((["--json"] if as_json else []) + (options or [])))
