"""`chronicle bench gateway`: what the model gateway adds to an agent's model call.

A real `chronicle serve --role api` process on a throwaway database, its upstream model a
server that answers at once (``bench.gateway_upstream``, a process of its own). The same
client, raw ``httpx`` (the official SDK's own request building costs more than the gateway
should, and would only add noise to both sides), calls that upstream directly (the baseline)
and through the gateway's ``/v1/chat/completions`` (with a Chronicle token, each agent in a
session of its own), in interleaved rounds. Each agent's conversation grows as an
agent's does: every call sends the previous messages, the model's answer and a new result.

1. Non-streaming calls, 1 agent (``CALLS`` calls a round) and 32 concurrent agents
   (``AGENT_CALLS`` each): p50 and p99 of the round's call latencies, each side; the added
   latency is the gateway's figure minus the direct one's, per round, median over rounds.
   Targets (issue 24): added p50 <= 2 ms, p99 <= 5 ms.
2. Streamed calls, 1 agent: time to the first content chunk, p50 of the round, added as
   above. Target: <= 2 ms.
3. Replay: an agent process (``REPLAY_AGENT``: ``REPLAY_CALLS`` calls, one after another) is
   recorded once with ``chronicle record``, then run again under ``chronicle record --replay``
   (the gateway answers from the recording, no model called), in rounds against the same
   agent calling the upstream directly; the agent's own calls per second. Target: >= 500.
4. The floor: the durable append of one ``llm.call`` (with its two new prompt messages)
   alone, in this process, on the same database: what of the added latency stays while each
   call is committed before it is answered (its p50 and p99 against the added targets).

    python -m bench.gateway [--rounds N] [--only calls streams replay floor] [--url URL] [--json]
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import orjson

from bench.harness import (
    BenchDatabase,
    Interleaved,
    Measurement,
    bench_arguments,
    command_line,
    interleave,
    measured_on_database,
    median,
    percentile,
    report,
)
from bench.server import Server, running

MODEL = "gpt-bench"
CALLS = 100  # a round of one agent: one conversation of this many calls
AGENTS = 32
AGENT_CALLS = 20  # a round of 32 agents: each a conversation of this many calls
STREAMS = 50
FLOOR_APPENDS = 200  # a round of the floor figure: appends of one llm.call, one after another
SYSTEM = "You are a coding agent. " + "Follow the repository's conventions. " * 40
TASK = "The test tests/test_parse.py fails: fix the parser so that it passes."
RESULT = "exit code 1\n" + "FAILED tests/test_parse.py::test_dates - AssertionError\n" * 4
P50_TARGET_MS = 2.0
P99_TARGET_MS = 5.0
FIRST_TOKEN_TARGET_MS = 2.0
LISTENING = re.compile(r"listening on (\d+)")
REPLAY_CALLS = 1000
REPLAY_TARGET = 500.0
RECORDING = re.compile(r"recording session ([0-9a-f-]{36})")
#: The agent of the replay figure: its calls to OPENAI_BASE_URL, one after another, then its
#: rate on its last line.
REPLAY_AGENT = """
import os, sys, time
import httpx, orjson
calls = int(sys.argv[1])
headers = {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
with httpx.Client(base_url=os.environ["OPENAI_BASE_URL"], headers=headers, timeout=60) as client:
    began = time.perf_counter()
    for step in range(calls):
        messages = [{"role": "system", "content": "You answer in one word."},
                    {"role": "user", "content": f"question {step}?"}]
        body = orjson.dumps({"model": "gpt-bench", "messages": messages})
        answer = client.post("/chat/completions", content=body)
        answer.raise_for_status()
    print(calls / (time.perf_counter() - began))
"""


class Upstream:
    """``bench.gateway_upstream`` in a process of its own."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.gateway_upstream"],
            cwd=Path(__file__).resolve().parents[1],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = LISTENING.search(line)
        if found is None:
            raise RuntimeError(f"the bench's model server did not start: {line}")
        self.url = f"http://127.0.0.1:{found.group(1)}/v1"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def gateway_server(database: BenchDatabase, root: Path, upstream: Upstream) -> Server:
    server = Server(database, root)
    server.env.update(
        {
            "CHRONICLE_LLM_MODEL": f"openai/{MODEL}",
            "CHRONICLE_LLM_BASE_URL": upstream.url,
            "CHRONICLE_LLM_API_KEY": "sk-bench",
            "CHRONICLE_LLM_RETRIES": "0",
            "CHRONICLE_GATEWAY_MODEL_MAP": f'{{"gpt-*": "openai/{MODEL}"}}',
            "CHRONICLE_GATEWAY_MAX_CONCURRENCY": str(AGENTS * 2),
        }
    )
    return server


class Side:
    """One way to reach the model: the same HTTP client on the upstream or on the gateway."""

    def __init__(self, name: str, base_url: str, api_key: str) -> None:
        self.name = name
        self.client = httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=200),
            timeout=60,
        )
        self.rounds = 0

    async def complete(self, messages: list[dict[str, Any]], session: str) -> str:
        """One chat completion: its answer's text."""
        response = await self.client.post(
            "/chat/completions",
            content=orjson.dumps({"model": MODEL, "messages": messages}),
            headers={"X-Chronicle-Session": session},
        )
        if response.status_code != 200:
            raise RuntimeError(f"{self.name}: {response.status_code} {response.text}")
        return str(orjson.loads(response.content)["choices"][0]["message"]["content"])

    async def stream(self, messages: list[dict[str, Any]], session: str) -> AsyncIterator[str]:
        """One streamed chat completion: each content piece as its chunk arrives."""
        body = {"model": MODEL, "messages": messages, "stream": True}
        async with self.client.stream(
            "POST",
            "/chat/completions",
            content=orjson.dumps(body),
            headers={"X-Chronicle-Session": session},
        ) as response:
            if response.status_code != 200:
                raise RuntimeError(f"{self.name}: {response.status_code}")
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                choices = orjson.loads(line[6:]).get("choices") or []
                piece = (choices[0].get("delta") or {}).get("content") if choices else None
                if piece:
                    yield piece

    def session(self) -> str:
        """A new session's name (the upstream ignores the header)."""
        self.rounds += 1
        return f"bench-{self.name}-{self.rounds}-{uuid.uuid4().hex[:8]}"


async def conversation(side: Side, calls: int, latencies: list[float], session: str) -> None:
    """One agent's conversation of ``calls`` calls, each timed."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    for step in range(calls):
        started = time.perf_counter()
        answer = await side.complete(messages, session)
        latencies.append((time.perf_counter() - started) * 1000)
        messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": f"step {step}: {RESULT}"})


async def first_tokens(side: Side, calls: int, waits: list[float], session: str) -> None:
    """``calls`` streamed calls of one conversation, each timed to its first content."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    for step in range(calls):
        started = time.perf_counter()
        text = ""
        async for piece in side.stream(messages, session):
            if not text:
                waits.append((time.perf_counter() - started) * 1000)
            text += piece
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "user", "content": f"step {step}: {RESULT}"})


class Percentiles:
    """Each round's p50 and p99 of one side (the round's function returns its p50)."""

    def __init__(self) -> None:
        self.p50: list[float] = []
        self.p99: list[float] = []

    def add(self, latencies: list[float]) -> float:
        self.p50.append(percentile(latencies, 50))
        self.p99.append(percentile(latencies, 99))
        return self.p50[-1]


def calls_round(
    side: Side, agents: int, calls: int, into: Percentiles
) -> Callable[[], Awaitable[float]]:
    async def measure() -> float:
        latencies: list[float] = []
        await asyncio.gather(
            *(conversation(side, calls, latencies, side.session()) for _ in range(agents))
        )
        return into.add(latencies)

    return measure


def added_rows(
    name: str, direct: Percentiles, gateway: Percentiles, result: Interleaved, warmup: int
) -> list[Measurement]:
    """The p50 and p99 rows of one figure: each round's added latency, median over rounds."""
    rows = []
    for pct, target in (("p50", P50_TARGET_MS), ("p99", P99_TARGET_MS)):
        base = getattr(direct, pct)[warmup:]
        ours = getattr(gateway, pct)[warmup:]
        rows.append(added_row(f"{name}, {pct}", base, ours, target, len(result.ratios)))
    return rows


def added_row(
    name: str, base: list[float], ours: list[float], target_ms: float, rounds: int
) -> Measurement:
    added = [b - a for a, b in zip(base, ours, strict=True)]
    return Measurement(
        name=name,
        unit="ms",
        baseline=median(base),
        chronicle=median(ours),
        ratio=None,
        target=f"added <= {target_ms:.0f} ms",
        met=median(added) <= target_ms,
        baseline_spread=f"{min(base):.2f}-{max(base):.2f}",
        chronicle_spread=f"{min(ours):.2f}-{max(ours):.2f}",
        detail={
            "added_ms": median(added),
            "added_per_round": added,
            "rounds": rounds,
            "baseline_samples": base,
            "chronicle_samples": ours,
        },
    )


async def measure_calls(direct: Side, gateway: Side, rounds: int) -> list[Measurement]:
    rows = []
    for agents, calls in ((1, CALLS), (AGENTS, AGENT_CALLS)):
        base, ours = Percentiles(), Percentiles()
        result = await interleave(
            calls_round(direct, agents, calls, base),
            calls_round(gateway, agents, calls, ours),
            rounds=rounds,
        )
        label = "1 agent" if agents == 1 else f"{agents} concurrent agents"
        rows += added_rows(f"non-streaming call latency, {label}", base, ours, result, warmup=1)
    return rows


async def measure_streams(direct: Side, gateway: Side, rounds: int) -> Measurement:
    waits: dict[str, list[float]] = {"direct": [], "gateway": []}

    def round_of(side: Side) -> Callable[[], Awaitable[float]]:
        async def measure() -> float:
            found: list[float] = []
            await first_tokens(side, STREAMS, found, side.session())
            waits[side.name].append(percentile(found, 50))
            return waits[side.name][-1]

        return measure

    result = await interleave(round_of(direct), round_of(gateway), rounds=rounds)
    return added_row(
        "time to first streamed token, 1 agent, p50",
        result.baseline.values,
        result.chronicle.values,
        FIRST_TOKEN_TARGET_MS,
        len(result.ratios),
    )


def run_agent(server: Server, root: Path, env: dict[str, str], *record: str) -> tuple[float, str]:
    """The replay figure's agent, under ``chronicle record`` when ``record`` names its options
    (else on its own, with ``env``): its calls per second, and the session recorded."""
    agent = root / "workspace" / "agent.py"
    agent.parent.mkdir(exist_ok=True)
    agent.write_text(REPLAY_AGENT)
    command = [sys.executable, str(agent), str(REPLAY_CALLS)]
    if record:
        command = [sys.executable, "-m", "app.cli", "record", "--url", server.url,
                   "--workspace", str(agent.parent), *record, "--", *command]  # fmt: skip
    done = subprocess.run(
        command, env={**server.env, **env}, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the replay agent failed ({done.returncode}): {done.stderr[-2000:]}")
    found = RECORDING.search(done.stderr)
    return float(done.stdout.strip().splitlines()[-1]), found.group(1) if found else ""


async def measure_floor(database: BenchDatabase, rounds: int) -> list[Measurement]:
    """The durable append of one ``llm.call`` alone, in process, with the two new prompt
    messages a step of a conversation stores with it: the part of a call's added latency
    that stays (an answered call is committed first). ``FLOOR_APPENDS`` a round; the row is
    the median over rounds of each round's percentile."""
    from app.events import LlmCall, LlmResponse, LlmUsage
    from app.events.masking import SecretMasker
    from app.store import EventStore

    async with await EventStore.open(database.app, masker=SecretMasker()) as store:
        durable = [
            str(await store.pool.fetchval(f"SHOW {name}"))
            for name in ("fsync", "synchronous_commit")
        ]
        percentiles: dict[str, list[float]] = {"p50": [], "p99": []}
        for round_ in range(rounds + 1):
            session, times = uuid.uuid4(), []
            for step in range(FLOOR_APPENDS):
                texts = [f'{{"content":"step {round_} {step} {n}","role":"user"}}' for n in (1, 2)]
                hashes = [hashlib.sha256(text.encode()).hexdigest() for text in texts]
                call = LlmCall(
                    model=f"openai/{MODEL}", params={}, fingerprint=hashes[0], prompt=hashes,
                    tools=hashes[1], tool_calling="native", latency_ms=1.0, attempts=1,
                    response=LlmResponse(content="Done: the tests pass now.", tool_calls=[],
                                         finish_reason="stop"),
                    usage=LlmUsage(prompt_tokens=120, completion_tokens=8, total_tokens=128),
                )  # fmt: skip
                started = time.perf_counter()
                await store.append(session, [call], messages=dict(zip(hashes, texts, strict=True)))
                times.append((time.perf_counter() - started) * 1000)
            if round_:  # the first round warms up
                percentiles["p50"].append(percentile(times, 50))
                percentiles["p99"].append(percentile(times, 99))
    return [
        Measurement(
            name=f"floor: durable append of one llm.call alone (in process), {pct}",
            unit="ms",
            baseline=None,
            chronicle=median(values),
            ratio=None,
            target=f"<= {target:.0f} ms (the added target)",
            met=median(values) <= target,
            chronicle_spread=f"{min(values):.2f}-{max(values):.2f}",
            detail={"samples": values, "fsync, synchronous_commit": durable},
        )
        for (pct, values), target in zip(
            percentiles.items(), (P50_TARGET_MS, P99_TARGET_MS), strict=True
        )
    ]


async def measure_replay(
    server: Server, upstream: Upstream, root: Path, rounds: int
) -> Measurement:
    user = "bench-recorder"
    await asyncio.to_thread(server.cli, "users", "add", user)
    options = ("--user", user)
    _, recording = await asyncio.to_thread(run_agent, server, root, {}, *options)
    direct_env = {"OPENAI_BASE_URL": upstream.url, "OPENAI_API_KEY": "sk-bench"}

    async def direct() -> float:
        return (await asyncio.to_thread(run_agent, server, root, direct_env))[0]

    async def replayed() -> float:
        rate, _ = await asyncio.to_thread(
            run_agent, server, root, {}, *options, "--replay", recording
        )
        return rate

    result = await interleave(direct, replayed, rounds=rounds)
    return Measurement(
        name=f"replay of a {REPLAY_CALLS:,}-call recording through the gateway",
        unit="calls/s",
        baseline=result.baseline.median,
        chronicle=result.chronicle.median,
        ratio=result.ratio,
        target=f">= {REPLAY_TARGET:.0f} calls/s",
        met=result.chronicle.median >= REPLAY_TARGET,
        baseline_spread=f"{result.baseline.low:.0f}-{result.baseline.high:.0f}",
        chronicle_spread=f"{result.chronicle.low:.0f}-{result.chronicle.high:.0f}",
        ratio_spread=f"{result.ratio_low:.2f}-{result.ratio_high:.2f}",
        detail={
            "rounds": len(result.ratios),
            "baseline_samples": result.baseline.values,
            "chronicle_samples": result.chronicle.values,
        },
    )


@contextlib.contextmanager
def upstream_running() -> Any:
    upstream = Upstream()
    upstream.start()
    try:
        yield upstream
    finally:
        upstream.stop()


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, rounds=5, figures=["calls", "streams", "replay", "floor"])
    args = parser.parse_args(argv)
    only = set(args.only or ["calls", "streams", "replay", "floor"])

    async def run(database: BenchDatabase) -> list[Measurement]:
        rows: list[Measurement] = []
        with (
            tempfile.TemporaryDirectory(prefix="chronicle-bench-gateway-") as root,
            upstream_running() as upstream,
        ):
            server = gateway_server(database, Path(root), upstream)
            async with running(server):
                token = await asyncio.to_thread(server.token, "bench-agent")
                direct = Side("direct", upstream.url, "sk-bench")
                gateway = Side("gateway", f"{server.url}/v1", token)
                if "calls" in only:
                    rows += await measure_calls(direct, gateway, args.rounds)
                if "streams" in only:
                    rows.append(await measure_streams(direct, gateway, args.rounds))
                if "replay" in only:
                    rows.append(await measure_replay(server, upstream, Path(root), args.rounds))
                if "floor" in only:
                    rows += await measure_floor(database, args.rounds)
                await direct.client.aclose()
                await gateway.client.aclose()
        return rows

    machine, rows = measured_on_database(args.url, run)
    added = {row.name: round(row.detail["added_ms"], 3) for row in rows if "added_ms" in row.detail}
    return report(
        "gateway",
        "Model gateway: latency a call through chronicle serve adds to the same call made "
        "directly (ms; median over the rounds of each round's percentile)",
        rows,
        as_json=args.json,
        machine=machine,
        how=command_line("gateway", args),
        extra={"added_ms": added, "load": os.getloadavg()},
    )


if __name__ == "__main__":
    sys.exit(main())
