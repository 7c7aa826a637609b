"""`chronicle bench NAME`: run a benchmark script from the project's bench/ folder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


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
