"""Replay benchmark: a recorded session re-fed into the agent, against the live loop.

    python -m bench.replay [--json] [--long N]        (or: chronicle bench replay)

A session of STEPS steps is recorded live (the real controller and executor, a local sandbox,
a model that answers at once: ``bench.agent.InstantModel``), then replayed; the live loop's
rate, measured in the same run, is the baseline. Longer recordings (1,000 steps, and
``--long`` steps) are written as the controller writes them (requests prepared by a real
gateway, actions made by the real agent), replayed, and the process's peak RSS read after
each replay. Every replay must match, with 0 model calls; no sandbox runs during a replay.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.agent.codeact import CodeActAgent, last_call
from app.config import Settings
from app.events import (
    AgentState,
    LlmCall,
    LlmResponse,
    Message,
    RunOutput,
    SessionCreated,
    ToolCall,
)
from app.llm import LlmConfig, LlmGateway
from app.replay import replay
from app.store import EventStore, RecordedEvent
from bench.agent import STEPS, InstantModel, instant_live_run
from bench.harness import Measurement, bench_arguments, report, throwaway_database

LONG = 1000


def created(model: str, workspace: str, max_iterations: int) -> SessionCreated:
    llm = LlmConfig(model=model, native_tool_calling=True)
    return SessionCreated(
        title="bench",
        config={
            "agent": "codeact",
            "workspace": workspace,
            "runtime": "local",
            "model": model,
            "llm": llm.public(),
            "mcp_servers": [],
            "max_iterations": max_iterations,
            "max_cost_usd": None,
            "stuck_detection": False,
        },
    )


async def record_live(store: EventStore, root: Path) -> tuple[uuid.UUID, float]:
    """A STEPS-step session through the live loop; (its id, steps/s)."""
    session = uuid.uuid4()
    workspace = root / "ws"
    await store.append(
        session,
        [created("openai/instant", str(workspace), STEPS + 10), Message(content="run true")],
        expected_seq=0,
    )
    model = InstantModel(store, STEPS)
    await model.load_client()  # as bench.agent: a real run loads it while the sandbox starts
    elapsed = await instant_live_run(store, session, workspace, model)
    return session, (STEPS + 1) / elapsed


async def record_written(store: EventStore, steps: int) -> uuid.UUID:
    """A ``steps``-step session written as the controller writes one, without running it."""
    session = uuid.uuid4()
    model = "openai/instant"
    gateway = LlmGateway(store, LlmConfig(model=model, native_tool_calling=True))
    agent = CodeActAgent(gateway, "/workspace")
    events: list[RecordedEvent] = await store.append(
        session,
        [created(model, "/workspace", steps + 10), Message(content="count")],
        expected_seq=0,
    )
    for step in range(steps + 1):
        request = gateway.prepare(agent.messages(events), agent.tools(), last_call(events))
        await gateway.store_prompt(request)
        name, arguments = ("execute_bash", json.dumps({"command": f"echo {step}"}))
        if step == steps:
            name, arguments = ("finish", '{"message": "done"}')
        call = LlmCall(
            model=model,
            params={**request.params, "base_url": None},
            fingerprint=request.fingerprint,
            prompt=request.recorded_prompt(),
            prompt_kept=request.kept,
            tools=request.tools_hash,
            response=LlmResponse(
                tool_calls=[ToolCall(id=f"c{step}", name=name, arguments=arguments)]
            ),
        )
        seq = events[-1].seq + 1
        batch = await store.append(session, [call, *agent.consequences(call.payload(), seq)])
        events += batch
        if step < steps:
            output = RunOutput(output=f"{step}\n", exit_code=0, cause=batch[1].seq)
            events += await store.append(session, [output])
    await store.append(session, [AgentState(state="finished", reason="the agent called finish")])
    return session


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def timed_replay(store: EventStore, session: uuid.UUID) -> tuple[float, int]:
    """(seconds, steps) of a replay that must match with 0 model calls."""
    started = time.perf_counter()
    result = await replay(store, session)
    seconds = time.perf_counter() - started
    assert result.matched and result.model_calls == 0, result.divergence
    return seconds, result.steps_served


async def run(url: str, long: int) -> tuple[list[Measurement], dict[str, Any]]:
    rows: list[Measurement] = []
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="chronicle-bench-replay-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        async with await EventStore.open(
            url, config=settings.store_config(), masker=settings.masker()
        ) as store:
            print(f"  ... recording {STEPS} live steps", file=sys.stderr, flush=True)
            live_session, live_rate = await record_live(store, Path(tmp))
            print("  ... replaying them", file=sys.stderr, flush=True)
            seconds, steps = await timed_replay(store, live_session)
            rate = steps / seconds
            rows.append(
                Measurement(
                    name=f"replay of a {STEPS}-step live recording (baseline: the live loop)",
                    unit="steps/s",
                    baseline=live_rate,
                    chronicle=rate,
                    ratio=rate / live_rate,
                    target="faster than live",
                    met=rate > live_rate,
                )
            )
            for length in sorted({LONG, long}):
                print(f"  ... writing and replaying {length} steps", file=sys.stderr, flush=True)
                session = await record_written(store, length)
                seconds, steps = await timed_replay(store, session)
                rss = peak_rss_mb()
                extra[f"peak_rss_mb_after_{length}_steps"] = round(rss, 1)
                rows.append(
                    Measurement(
                        name=f"replay of {length} steps end to end (peak RSS {rss:.0f} MB)",
                        unit="s",
                        baseline=None,
                        chronicle=seconds,
                        ratio=None,
                        target="< 1 s" if length == LONG else "-",
                        met=seconds < 1 if length == LONG else True,
                        detail={"steps": steps, "steps_per_s": steps / seconds},
                    )
                )
    return rows, extra


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__)
    parser.add_argument("--long", type=int, default=LONG, help="also replay this many steps")
    args = parser.parse_args(argv)
    with throwaway_database(args.url) as url:
        rows, extra = asyncio.run(run(url, args.long))
    title = "Replay (baseline: the live loop's steps/s, same run); 0 model calls, no sandbox"
    return report("replay", title, rows, as_json=args.json, extra=extra)


if __name__ == "__main__":
    sys.exit(main())
