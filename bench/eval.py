"""Evaluation benchmark: the harness's overhead over the sessions it runs, and re-scoring.

    python -m bench.eval [--json] [--rounds N] [--url URL]      (or: chronicle bench eval)

1. Overhead. A suite of ``TASKS`` tasks (files to write, a prompt; no check, so the figure is
   the harness's own: workspaces, tagging, scoring, progress, the projection catch-up) is run
   by ``run_suite`` (concurrency 1), against the same sessions run one by one with
   ``run_session`` over the same prepared workspaces: the real runner, controller, executor
   and local sandbox, and a model behind HTTP that answers at once (``execute_bash true``,
   then ``finish``). Both sides alternate in rounds (bench/harness.py); the ratio is the
   median of per-round ratios of wall times. Target: <= 1.05x. On a loaded 2-core machine
   two runs of the same sessions differ by more than 5%, so the harness's own share is also
   read from each suite run itself: its wall time less the time its sessions' runner
   (``run_session``, timed by wrapping it) took, over its wall time.
2. Re-scoring ``RESCORED`` recorded sessions with the ``finished`` scorer
   (``rescore``: read, score, append an ``eval.score`` each); the baseline is one raw
   asyncpg fetch of the same sessions' events. Target: < 2 s. Measured first, before the
   suite loads the model client (litellm), as in ``chronicle eval score``, which never loads
   it: its objects (about 340,000) make every full collection of the cyclic collector slower.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
import time
import uuid
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.config import Settings
from app.evaluation import running
from app.evaluation.rescoring import rescore
from app.evaluation.running import RunOptions, run_suite
from app.evaluation.scorers import BUILTIN, DEFAULT_SCORERS, Finished
from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Suite, Task
from app.evaluation.workspaces import prepare_workspace
from app.events import AgentState, Finish, LlmCall, Message, SessionCreated
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from bench.harness import (
    BenchDatabase,
    Measurement,
    bench_arguments,
    command_line,
    interleave,
    measured_on_database,
    median,
    report,
)

TASKS = 6
RESCORED = 1000
OVERHEAD_TARGET = 1.05
RESCORE_TARGET_S = 2.0


class InstantHandler(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint answering at once: ``true``, then ``finish``."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ran = any(m.get("role") == "tool" for m in body.get("messages", []))
        name, arguments = (
            ("finish", {"message": "done"}) if ran else ("execute_bash", {"command": "true"})
        )
        reply = {
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "instant"),
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": f"call-{uuid.uuid4().hex[:8]}", "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)}}],
            }}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def suite() -> Suite:
    return Suite(
        name="bench",
        tasks=[
            Task(id=f"t{i}", prompt=f"Task {i}: run true, then finish.",
                 files={"README.md": f"task {i}\n"})
            for i in range(TASKS)
        ],
    )  # fmt: skip


async def one_by_one(store: EventStore, settings: Settings, root: Path, the_suite: Suite) -> float:
    """Seconds to run the suite's sessions one by one, each in its prepared workspace."""
    base = root / f"plain-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    for task in the_suite.tasks:
        workspace = await prepare_workspace(task, base / task.id, root)
        _, outcome = await run_session(
            store, settings, SessionOptions(workspace=workspace, stuck_detection=True),
            task=task.prompt,
        )  # fmt: skip
        assert outcome == "finished", outcome
    return time.perf_counter() - started


class SessionClock:
    """Times every session ``run_suite`` runs: the runner it calls, wrapped (a bench-only
    instrument, so the harness's own share is read from the same run, not from a second
    run of the same sessions that a loaded machine makes slower or faster by more than 5%)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.runner = running.run_session

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.runner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


async def as_a_suite(
    store: EventStore, settings: Settings, root: Path, the_suite: Suite, shares: list[float]
) -> float:
    """Seconds for ``run_suite`` to run and score the same tasks (a new run each time); the
    harness's own share of them (wall time less its sessions' runner time) goes to
    ``shares``."""
    options = RunOptions(name=f"bench-{uuid.uuid4().hex[:8]}", concurrency=1)
    scorers = [BUILTIN[name] for name in DEFAULT_SCORERS]
    clock = SessionClock()
    running.run_session = clock  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        results = await run_suite(store, settings, the_suite, root, options, scorers)
        seconds = time.perf_counter() - started
    finally:
        running.run_session = clock.runner
    assert all(r.passed for r in results), results
    shares.append((seconds - clock.seconds) / seconds)
    return seconds


async def recorded_sessions(store: EventStore, count: int) -> list[uuid.UUID]:
    """``count`` finished sessions of a run, written as a run records them."""
    task = Task(id="t", prompt="p")
    ids = [uuid.uuid4() for _ in range(count)]

    async def write(session: uuid.UUID) -> None:
        await store.append(session, [
            SessionCreated(config=evaluation_config("rescored", task, 1)),
            Message(content="p"),
            LlmCall(model="openai/instant", fingerprint="f" * 64, cost_usd=0.001),
            Finish(message="done", cause=3),
            AgentState(state="finished", reason="the agent called finish"),
        ], expected_seq=0)  # fmt: skip

    for start in range(0, count, 100):
        await asyncio.gather(*(write(s) for s in ids[start : start + 100]))
    return ids


async def raw_read(database: BenchDatabase, ids: list[uuid.UUID]) -> float:
    import asyncpg

    connection = await asyncpg.connect(database.admin)
    try:
        started = time.perf_counter()
        await connection.fetch(
            "SELECT * FROM events WHERE session_id = ANY($1::uuid[]) ORDER BY session_id, seq", ids
        )
        return time.perf_counter() - started
    finally:
        await connection.close()


async def run(database: BenchDatabase, rounds: int) -> list[Measurement]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), InstantHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory(prefix="chronicle-bench-eval-") as tmp:
            root = Path(tmp)
            settings = Settings(
                data_dir=root / "data", llm_model="openai/instant",
                llm_base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
                llm_api_key="sk-bench", llm_native_tool_calling=True, runtime="local",
                llm_input_cost_per_token=0.0, llm_output_cost_per_token=0.0,
            )  # fmt: skip
            async with await EventStore.open(
                database.app, config=settings.store, masker=settings.masker()
            ) as store:
                # first: `chronicle eval score` is a process that never loads the model
                # client (litellm), whose 340,000 objects would slow every collection
                print(f"  ... re-scoring {RESCORED} sessions", file=sys.stderr, flush=True)
                ids = await recorded_sessions(store, RESCORED)
                scorer = [Finished()]
                rescored: list[float] = []
                raw: list[float] = []
                for _ in range(rounds + 1):
                    raw.append(await raw_read(database, ids))
                    started = time.perf_counter()
                    results = await rescore(store, ids, scorer)
                    rescored.append(time.perf_counter() - started)
                    assert all(r.error is None for r in results)
                the_suite = suite()
                print(f"  ... {rounds} rounds (+1 warm-up): {TASKS} sessions one by one, "
                      f"then as a suite", file=sys.stderr, flush=True)  # fmt: skip
                shares: list[float] = []
                overhead = await interleave(
                    partial(one_by_one, store, settings, root, the_suite),
                    partial(as_a_suite, store, settings, root, the_suite, shares),
                    rounds=rounds,
                )
                shares = shares[1:]  # the warm-up round
    finally:
        server.shutdown()
    raw, rescored = raw[1:], rescored[1:]  # the warm-up round
    suite_row = Measurement(
        name=f"suite of {TASKS} tasks via eval run (baseline: the same sessions one by one)",
        unit="s",
        baseline=overhead.baseline.median,
        chronicle=overhead.chronicle.median,
        ratio=overhead.ratio,
        target=f"<= {OVERHEAD_TARGET}x",
        met=overhead.ratio <= OVERHEAD_TARGET,
        baseline_spread=f"{overhead.baseline.low:.2f}-{overhead.baseline.high:.2f}",
        chronicle_spread=f"{overhead.chronicle.low:.2f}-{overhead.chronicle.high:.2f}",
        ratio_spread=f"{overhead.ratio_low:.2f}-{overhead.ratio_high:.2f}",
        detail={"rounds": len(overhead.ratios), "ratios": overhead.ratios,
                "baseline_samples": overhead.baseline.values,
                "chronicle_samples": overhead.chronicle.values},
    )  # fmt: skip
    share_row = Measurement(
        name="the harness's own share of a suite's wall time (wall - its sessions' runner "
        "time, in the same runs)",
        unit="%",
        baseline=None,
        chronicle=100 * median(shares),
        ratio=None,
        target=f"<= {100 * (OVERHEAD_TARGET - 1):g} %",
        met=median(shares) <= OVERHEAD_TARGET - 1,
        chronicle_spread=f"{100 * min(shares):.1f}-{100 * max(shares):.1f}",
        detail={"rounds": len(shares), "samples": shares},
    )
    rescore_row = Measurement(
        name=f"re-score {RESCORED:,} recorded sessions, finished (baseline: one raw read of "
        "their events)",
        unit="s",
        baseline=median(raw),
        chronicle=median(rescored),
        ratio=median(rescored) / median(raw),
        target=f"< {RESCORE_TARGET_S:g} s",
        met=median(rescored) < RESCORE_TARGET_S,
        baseline_spread=f"{min(raw):.2f}-{max(raw):.2f}",
        chronicle_spread=f"{min(rescored):.2f}-{max(rescored):.2f}",
        detail={"rounds": len(rescored), "samples": rescored, "raw_samples": raw},
    )
    return [suite_row, share_row, rescore_row]


def main(argv: list[str] | None = None) -> int:
    args = bench_arguments(__doc__, rounds=5).parse_args(argv)
    machine, rows = measured_on_database(args.url, partial(run, rounds=args.rounds))
    title = "Evaluation (baselines: the same sessions one by one; a raw read of the events)"
    how = (
        command_line("eval", args) + f"; {args.rounds} measured rounds after 1 warm-up, "
        f"{TASKS} sessions run one by one and as a suite alternating (ratio = median of "
        f"per-round ratios of wall times); {RESCORED} sessions re-scored per round"
    )
    return report("eval", title, rows, as_json=args.json, machine=machine, how=how)


if __name__ == "__main__":
    sys.exit(main())
