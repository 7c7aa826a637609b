"""The sandbox client's HTTP stack: app/runtime/http.py against httpx, and against a raw spawn.

    python -m bench.sandbox_client [--docker] [--rounds N]

A `true` through one ready sandbox (local, or Docker with ``--docker``), ``SAMPLES`` times per
sample (the median of them), interleaved in rounds (bench/harness.py) three ways: httpx vs
this client on the same sandbox, raw ``subprocess.run(["true"])`` vs this client, raw vs
httpx. The httpx client is built as the sandbox client built it before app/runtime/http.py.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from app.config import Settings
from app.events import Run
from app.runtime import LocalRuntime
from app.runtime.docker.runtime import DockerRuntime
from bench.harness import Interleaved, interleave, this_machine

SAMPLES = 200


async def main_async(docker: bool, rounds: int) -> list[tuple[str, Interleaved]]:
    with tempfile.TemporaryDirectory(prefix="chronicle-bench-client-") as tmp:
        root = Path(tmp)
        runtime: LocalRuntime | DockerRuntime
        if docker:
            config = Settings(data_dir=root).runtime_config().docker
            runtime = DockerRuntime(root / "docker", uuid.uuid4(), config=config)
        else:
            runtime = LocalRuntime(root / "local")
        await runtime.start()
        await runtime.wait_ready(120)
        client = runtime.client
        assert client is not None
        ours: Any = client._http
        theirs = httpx.AsyncClient(
            base_url=client.base_url,
            headers={"Authorization": f"Bearer {client.token}"} if client.token else {},
            timeout=httpx.Timeout(60, connect=5.0),
            transport=httpx.AsyncHTTPTransport(uds=client.unix_socket),
        )

        async def through(http: Any) -> float:
            client._http = http
            samples = []
            for _ in range(SAMPLES):
                start = time.perf_counter()
                await runtime.execute(Run(command="true"))
                samples.append((time.perf_counter() - start) * 1000)
            return statistics.median(samples)

        def spawn() -> float:
            samples = []
            for _ in range(SAMPLES):
                start = time.perf_counter()
                subprocess.run(["true"], check=True, stdout=subprocess.DEVNULL)
                samples.append((time.perf_counter() - start) * 1000)
            return statistics.median(samples)

        async def raw() -> float:
            return await asyncio.to_thread(spawn)

        try:
            return [
                (
                    "httpx vs app/runtime/http.py",
                    await interleave(lambda: through(theirs), lambda: through(ours), rounds=rounds),
                ),
                (
                    "raw spawn vs app/runtime/http.py",
                    await interleave(raw, lambda: through(ours), rounds=rounds),
                ),
                (
                    "raw spawn vs httpx",
                    await interleave(raw, lambda: through(theirs), rounds=rounds),
                ),
            ]
        finally:
            client._http = ours
            await theirs.aclose()
            await runtime.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docker", action="store_true", help="a Docker sandbox, not a local one")
    parser.add_argument("--rounds", type=int, default=7, help="measured rounds per comparison")
    args = parser.parse_args(argv)
    machine = this_machine()
    results = asyncio.run(main_async(args.docker, args.rounds))
    print(f"machine: {machine.line()}")
    print(f"`true` through a {'Docker' if args.docker else 'local'} sandbox, ms (median of "
          f"{SAMPLES} per sample, {args.rounds} rounds after 1 warm-up)")  # fmt: skip
    for name, result in results:
        base, ours = result.baseline, result.chronicle
        print(
            f"{name}: {base.median:.3f} ({base.low:.3f}-{base.high:.3f}) vs "
            f"{ours.median:.3f} ({ours.low:.3f}-{ours.high:.3f}), ratio {result.ratio:.2f} "
            f"({result.ratio_low:.2f}-{result.ratio_high:.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
