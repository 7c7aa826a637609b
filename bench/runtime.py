"""Runtime benchmark: sandbox round trips and start-up, against raw baselines in one run.

    python -m bench.runtime [--json]        (or: chronicle bench runtime)

Baselines: `subprocess.run(["true"])` for the local runtime, `docker exec CONTAINER true` for
Docker. The Docker part needs a Docker engine (and CHRONICLE_SANDBOX_BASE_IMAGE where no
registry is reachable); without one it is reported as skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.config import Settings
from app.events import Run
from app.runtime import LocalRuntime, Runtime
from app.runtime.config import DockerConfig
from app.runtime.docker.runtime import DockerRuntime, container_name
from app.runtime.pool import SandboxPool
from bench.harness import Measurement, median, report


def ms(seconds: float) -> float:
    return seconds * 1000


async def round_trips(runtime: LocalRuntime | DockerRuntime, n: int) -> float:
    """Median milliseconds of `true` through the runtime."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await runtime.execute(Run(command="true"))
        samples.append(ms(time.perf_counter() - start))
    return median(samples)


def raw_runs(argv: list[str], n: int) -> float:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        samples.append(ms(time.perf_counter() - start))
    return median(samples)


async def ready_from_pool(factory: Callable[[], Runtime]) -> float:
    """Milliseconds from asking a warm pool for a sandbox to holding a ready one."""
    pool = SandboxPool(factory, size=1)
    await pool.start()
    try:
        start = time.perf_counter()
        pooled = await pool.acquire()
        elapsed = ms(time.perf_counter() - start)
        await pooled.close()
    finally:
        await pool.close()
    return elapsed


async def local_part(root: Path) -> list[Measurement]:
    runtime = LocalRuntime(root / "local")
    cold = time.perf_counter()
    await runtime.start()
    await runtime.wait_ready(30)
    cold_ms = ms(time.perf_counter() - cold)
    try:
        await round_trips(runtime, 20)  # warm up
        ours = await round_trips(runtime, 300)
    finally:
        await runtime.close()
    raw = await asyncio.to_thread(raw_runs, ["true"], 300)
    pool_ms = await ready_from_pool(lambda: LocalRuntime(root / f"pool-{uuid.uuid4()}"))
    return [
        Measurement(
            name="local `true` round trip (overhead over raw subprocess)", unit="ms",
            baseline=raw, chronicle=ours, ratio=ours / raw,
            target="<= +3 ms", met=ours - raw <= 3,
        ),
        Measurement(
            name="local sandbox cold start to ready", unit="ms", baseline=None,
            chronicle=cold_ms, ratio=None, target="-", met=True,
        ),
        Measurement(
            name="ready from the warm pool (local)", unit="ms", baseline=None,
            chronicle=pool_ms, ratio=None, target="<= 100 ms", met=pool_ms <= 100,
        ),
    ]  # fmt: skip


async def docker_part(root: Path, config: DockerConfig) -> list[Measurement]:
    warm = DockerRuntime(root / "warm", uuid.uuid4(), config=config)
    await warm.start()  # builds the image if needed: not part of the cold-start measurement
    await warm.wait_ready(60)
    try:
        cold_samples = []
        for _ in range(3):
            runtime = DockerRuntime(root / "cold", uuid.uuid4(), config=config)
            start = time.perf_counter()
            await runtime.start()
            await runtime.wait_ready(60)
            cold_samples.append(ms(time.perf_counter() - start))
            await runtime.close()
        await round_trips(warm, 10)
        ours = await round_trips(warm, 100)
        name = container_name(warm.session_id)
        raw = await asyncio.to_thread(raw_runs, ["docker", "exec", name, "true"], 20)
    finally:
        await warm.close()
    pool = SandboxPool(
        lambda: DockerRuntime(root / f"pool-{uuid.uuid4()}", uuid.uuid4(), config=config),
        size=1,
    )
    await pool.start()
    try:
        start = time.perf_counter()
        pooled = await pool.acquire()
        pool_ms = ms(time.perf_counter() - start)
        await pooled.close()
    finally:
        await pool.close()
    cold_ms = median(cold_samples)
    return [
        Measurement(
            name="docker `true` round trip (vs raw docker exec)", unit="ms",
            baseline=raw, chronicle=ours, ratio=ours / raw,
            target="<= 0.5x baseline", met=ours / raw <= 0.5,
        ),
        Measurement(
            name="docker cold start to ready", unit="ms", baseline=None,
            chronicle=cold_ms, ratio=None, target="<= 3000 ms", met=cold_ms <= 3000,
        ),
        Measurement(
            name="ready from the warm pool (docker)", unit="ms", baseline=None,
            chronicle=pool_ms, ratio=None, target="<= 100 ms", met=pool_ms <= 100,
        ),
    ]  # fmt: skip


def docker_problem() -> str | None:
    import docker

    try:
        docker.from_env().ping()
    except Exception as exc:
        return str(exc)
    return None


async def run() -> tuple[list[Measurement], str | None]:
    with tempfile.TemporaryDirectory(prefix="chronicle-bench-rt-") as tmp:
        root = Path(tmp)
        rows = await local_part(root)
        problem = docker_problem()
        if problem is None:
            rows += await docker_part(root, Settings(data_dir=root / "data").docker_config())
        return rows, problem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    args = parser.parse_args(argv)
    rows, docker_skipped = asyncio.run(run())
    title = "Runtime (baselines: raw subprocess, raw docker exec; same run)"
    return report(
        "runtime", title, rows, as_json=args.json, extra={"Docker part skipped": docker_skipped}
    )


if __name__ == "__main__":
    sys.exit(main())
