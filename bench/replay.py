"""Replay benchmark: a recorded session re-fed into the agent, against the live loop.

    python -m bench.replay [--json] [--long N]        (or: chronicle bench replay)

A session of STEPS steps is recorded live (the real controller and executor, a local sandbox,
a model that answers at once: ``bench.agent.InstantModel``), then replayed; the live loop's
rate, measured in the same run, is the baseline. Longer recordings (1,000 steps, and
``--long`` steps, 10,000 by default) are written as the controller writes them (requests
prepared by a real gateway, actions made by the real agent) and each is replayed in a
process of its own, which reports the replay's time and its peak RSS (getrusage). The
``--long`` recording is also written with the agent's condensation on (``CONDENSE_AT``), as
a long live session runs: its prompt stays bounded, so its memory shows what a replay holds
beyond the conversation. Every replay must match, with 0 model calls; no sandbox runs
during a replay.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path

from pydantic import BaseModel

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.agent.codeact import CodeActAgent, last_call
from app.config import Settings
from app.events import (
    AgentState,
    Condensation,
    LlmCall,
    LlmResponse,
    Message,
    RunOutput,
    SessionCreated,
    ToolCall,
)
from app.llm import LlmConfig, LlmGateway
from app.llm.call_log import CallLog
from app.replay import replay
from app.store import BufferedSession, EventStore, RecordedEvent
from bench.agent import STEPS, InstantModel, instant_live_run
from bench.harness import (
    BenchDatabase,
    Measurement,
    bench_arguments,
    measured_on_database,
    report,
)

LONG = 1000
LONG_DEFAULT = 10_000


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


#: With condensation: the model's context window is "exceeded" once a prompt holds this many
#: messages, and the controller condenses (forgets the older half of the turns), as a long
#: live session does.
CONDENSE_AT = 400


async def record_written(
    store: EventStore, steps: int, *, condense_at: int | None = None
) -> uuid.UUID:
    """A ``steps``-step session written as the controller writes one, without running it;
    with ``condense_at``, condensed as the controller condenses when a prompt has that many
    messages (a failed call of kind ``context_window``, then ``agent.condensation``).

    Written through a ``BufferedSession`` (seqs at once, the store written in batches): three
    round trips a step made writing 10,000 steps take minutes, longer than replaying them."""
    session = uuid.uuid4()
    log = BufferedSession(store, session)
    try:
        await _write_steps(log, session, steps, condense_at)
    finally:
        await log.close()
    return session


def _condensation(events: list[RecordedEvent]) -> Condensation:
    """The condensation ``AgentController._condense`` appends after ``events``."""
    last = next((e for e in reversed(events) if e.kind == "agent.condensation"), None)
    since = last.payload["forget_before"] if last else 0
    calls = [
        e.seq
        for e in events
        if e.kind == "llm.call" and not e.payload.get("error") and e.seq >= since
    ]
    return Condensation(
        forget_before=calls[len(calls) // 2],
        forgotten_calls=len(calls) // 2 + (last.payload.get("forgotten_calls", 0) if last else 0),
        reason="the conversation exceeded the model's context window",
    )


async def _write_steps(
    store: CallLog, session: uuid.UUID, steps: int, condense_at: int | None = None
) -> None:
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
        if condense_at is not None and len(request.messages) >= condense_at:
            failed = LlmCall(
                model=model,
                params={**request.params, "base_url": None},
                fingerprint=request.fingerprint,
                prompt=request.recorded_prompt(),
                prompt_kept=request.kept,
                tools=request.tools_hash,
                error="the prompt is longer than the model's context window",
                error_kind="context_window",
            )
            events += await store.append(session, [failed])
            events += await store.append(session, [_condensation(events)])
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


def peak_rss_mb() -> float:
    """The process's peak RSS since it started, or since ``reset_peak_rss``."""
    status = _proc_status()
    if "VmHWM" in status:
        return status["VmHWM"]
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    return _proc_status().get("VmRSS", peak_rss_mb())


def reset_peak_rss() -> None:
    """Start the peak over from the current RSS (Linux: ``clear_refs`` 5), so the peak read
    after a replay is the replay's, not the imports' before it."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _proc_status() -> dict[str, float]:
    """VmRSS, VmHWM (MB) from /proc/self/status; empty where there is none."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return {}
    return {
        key: float(value.split()[0]) / 1024
        for key, _, value in (line.partition(":") for line in lines)
        if key in ("VmRSS", "VmHWM")
    }


async def timed_replay(store: EventStore, session: uuid.UUID) -> tuple[float, int]:
    """(seconds, steps) of a replay that must match with 0 model calls."""
    started = time.perf_counter()
    result = await replay(store, session)
    seconds = time.perf_counter() - started
    assert result.matched and result.model_calls == 0, result.divergence
    return seconds, result.steps_served


class ChildReplay(BaseModel):
    """What a replay in a process of its own measured."""

    seconds: float
    cpu_seconds: float
    steps: int
    #: RSS before the replay (interpreter, imports, an open store), and the peak during it
    rss_before_mb: float
    rss_peak_mb: float


async def _child(url: str, session: uuid.UUID) -> ChildReplay:
    with tempfile.TemporaryDirectory(prefix="chronicle-bench-replay-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        async with await EventStore.open(
            url, config=settings.store, masker=settings.masker()
        ) as store:
            reset_peak_rss()
            before = rss_mb()
            cpu = time.process_time()
            seconds, steps = await timed_replay(store, session)
            return ChildReplay(
                seconds=seconds,
                cpu_seconds=time.process_time() - cpu,
                steps=steps,
                rss_before_mb=before,
                rss_peak_mb=peak_rss_mb(),
            )


def _label(steps: int, condensed: bool) -> str:
    return f"{steps:,} steps" + (f", condensed at {CONDENSE_AT} messages" if condensed else "")


def replay_in_a_process(url: str, session: uuid.UUID) -> ChildReplay:
    """Replay ``session`` in a fresh process, so its peak RSS is this replay's alone."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.replay", "--child", str(session), "--url", url],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the replay of {session} failed:\n{done.stderr[-4000:]}")
    return ChildReplay.model_validate_json(done.stdout.strip().splitlines()[-1])


async def run(database: BenchDatabase, long: int) -> list[Measurement]:
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="chronicle-bench-replay-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        async with await EventStore.open(
            database.app, config=settings.store, masker=settings.masker()
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
            # (steps, condensed) -> the replay; condensed: the long recording again, with the
            # agent's condensation on, as a long live session runs (its prompt stays bounded)
            replays: dict[tuple[int, bool], ChildReplay] = {}
            for length, condensed in [*((n, False) for n in sorted({LONG, long})), (long, True)]:
                print(f"  ... writing {_label(length, condensed)}", file=sys.stderr, flush=True)
                session = await record_written(
                    store, length, condense_at=CONDENSE_AT if condensed else None
                )
                print("  ... replaying them in a process", file=sys.stderr, flush=True)
                child = await asyncio.to_thread(replay_in_a_process, database.app, session)
                replays[length, condensed] = child
                print(f"  ... {child}", file=sys.stderr, flush=True)
    for (length, condensed), child in replays.items():
        rate = child.steps / child.seconds
        rows.append(
            Measurement(
                name=f"replay of {_label(length, condensed)} end to end (a process of its own)",
                unit="s",
                baseline=None,
                chronicle=child.seconds,
                ratio=None,
                target="< 1 s" if length == LONG else "-",
                met=child.seconds < 1 if length == LONG else True,
                detail={
                    "steps": child.steps,
                    "steps_per_s": rate,
                    "x_live": rate / live_rate,
                    "cpu_s": child.cpu_seconds,
                },
            )
        )
    short = replays[LONG, False].rss_peak_mb
    for (length, condensed), child in replays.items():
        rows.append(
            Measurement(
                name=f"peak RSS, replay of {_label(length, condensed)} (before it: "
                f"{child.rss_before_mb:.0f} MB)",
                unit="MB",
                baseline=None,
                chronicle=child.rss_peak_mb,
                ratio=None,
                target="flat in length" if length != LONG else "-",
                met=length == LONG or child.rss_peak_mb <= 1.2 * short,
                detail={"grown_mb": child.rss_peak_mb - child.rss_before_mb},
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__)
    parser.add_argument(
        "--long", type=int, default=LONG_DEFAULT, help="also replay this many steps"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(asyncio.run(_child(args.url, uuid.UUID(args.child))).model_dump_json())
        return 0
    machine, rows = measured_on_database(args.url, partial(run, long=args.long))
    title = "Replay (baseline: the live loop's steps/s, same run); 0 model calls, no sandbox"
    how = (
        f"python -m bench.replay --long {args.long}; a {STEPS}-step live run (instant model, local "
        "sandbox) and its replay in one process; recordings of "
        f"{LONG:,} and {args.long:,} steps written as the controller writes them (and "
        f"{args.long:,} condensed at {CONDENSE_AT} messages), each "
        "replayed in a fresh process (time from replay() call to return, peak RSS by "
        "getrusage); x_live = replay steps/s over the live run's"
    )
    return report("replay", title, rows, as_json=args.json, machine=machine, how=how)


if __name__ == "__main__":
    sys.exit(main())
