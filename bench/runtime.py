"""Runtime benchmark: sandbox round trips and start-up, against raw baselines in one run.

    python -m bench.runtime [--json] [--rounds N]        (or: chronicle bench runtime)

Baselines: a raw `subprocess.run(["true"])` for both runtimes (issue 9: a `true` through a
ready sandbox should cost no more than spawning a fresh `true`), and `docker exec CONTAINER
true` for Docker. Each round trip and its baseline alternate in rounds (bench/harness.py),
the first discarded as warm-up; a sample is the median of ``SAMPLES`` calls. The Docker part
needs a Docker engine (and CHRONICLE_SANDBOX_BASE_IMAGE where no registry is reachable);
without one it is reported as skipped.
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
from bench.harness import Interleaved, Measurement, interleave, median, report, this_machine

#: `true`s per sample (their median); `docker exec` is ~50 ms, so fewer of those.
SAMPLES = 200
DOCKER_EXEC_SAMPLES = 10


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


def latency_row(name: str, result: Interleaved, at_most: float) -> Measurement:
    """A round trip against its baseline from the same rounds; met when the median of the
    per-round ratios is at most ``at_most``."""
    return Measurement(
        name=name, unit="ms", baseline=result.baseline.median,
        chronicle=result.chronicle.median, ratio=result.ratio,
        target=f"<= {at_most}x baseline", met=result.ratio <= at_most,
        baseline_spread=f"{result.baseline.low:.2f}-{result.baseline.high:.2f}",
        chronicle_spread=f"{result.chronicle.low:.2f}-{result.chronicle.high:.2f}",
        ratio_spread=f"{result.ratio_low:.2f}-{result.ratio_high:.2f}",
        detail={"rounds": len(result.ratios), "samples_per_value": SAMPLES,
                "baseline_samples": result.baseline.values,
                "chronicle_samples": result.chronicle.values, "ratios": result.ratios},
    )  # fmt: skip


async def raw_true(n: int = SAMPLES) -> float:
    """Median milliseconds of a fresh `true` process (``subprocess.run``), off the loop."""
    return await asyncio.to_thread(raw_runs, ["true"], n)


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


async def local_part(root: Path, rounds: int) -> list[Measurement]:
    runtime = LocalRuntime(root / "local")
    cold = time.perf_counter()
    await runtime.start()
    await runtime.wait_ready(30)
    cold_ms = ms(time.perf_counter() - cold)
    try:
        result = await interleave(raw_true, lambda: round_trips(runtime, SAMPLES), rounds=rounds)
    finally:
        await runtime.close()
    pool_ms = await ready_from_pool(lambda: LocalRuntime(root / f"pool-{uuid.uuid4()}"))
    return [
        latency_row("local `true` round trip vs raw subprocess.run([\"true\"])", result, 1.0),
        Measurement(
            name="local sandbox cold start to ready", unit="ms", baseline=None,
            chronicle=cold_ms, ratio=None, target="-", met=True,
        ),
        Measurement(
            name="ready from the warm pool (local)", unit="ms", baseline=None,
            chronicle=pool_ms, ratio=None, target="<= 100 ms", met=pool_ms <= 100,
        ),
    ]  # fmt: skip


async def docker_part(root: Path, config: DockerConfig, rounds: int) -> list[Measurement]:
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
        vs_spawn = await interleave(raw_true, lambda: round_trips(warm, SAMPLES), rounds=rounds)
        argv = ["docker", "exec", container_name(warm.session_id), "true"]
        vs_exec = await interleave(
            lambda: asyncio.to_thread(raw_runs, argv, DOCKER_EXEC_SAMPLES),
            lambda: round_trips(warm, SAMPLES),
            rounds=rounds,
        )
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
        latency_row("Docker `true` round trip vs raw subprocess.run([\"true\"])", vs_spawn, 1.0),
        latency_row("Docker `true` round trip vs raw docker exec", vs_exec, 0.5),
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


async def run(rounds: int) -> tuple[list[Measurement], str | None]:
    with tempfile.TemporaryDirectory(prefix="chronicle-bench-rt-") as tmp:
        root = Path(tmp)
        rows = await local_part(root, rounds)
        problem = docker_problem()
        if problem is None:
            config = Settings(data_dir=root / "data").runtime_config().docker
            rows += await docker_part(root, config, rounds)
        return rows, problem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--rounds", type=int, default=7, help="measured rounds per figure")
    args = parser.parse_args(argv)
    machine = this_machine()
    rows, docker_skipped = asyncio.run(run(args.rounds))
    title = "Runtime (baselines: raw subprocess, raw docker exec; interleaved rounds, one run)"
    how = (
        f"python -m bench.runtime --rounds {args.rounds}; {args.rounds} measured rounds after 1"
        f" warm-up, baseline and sandbox alternating; a value is the median of {SAMPLES} calls"
        f" ({DOCKER_EXEC_SAMPLES} for docker exec); medians and ranges over the rounds, ratio ="
        " median of the per-round ratios"
    )
    return report(
        "runtime",
        title,
        rows,
        as_json=args.json,
        extra={"Docker part skipped": docker_skipped},
        machine=machine,
        how=how,
    )


if __name__ == "__main__":
    sys.exit(main())
