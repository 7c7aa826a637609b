"""Agent benchmark: controller overhead per step, and rebuilding a long session's history.

    python -m bench.agent [--json] [--rounds N] [--url URL]     (or: chronicle bench agent)

Steps run through the real controller, executor and local sandbox, with a model that answers
at once (in process, so the number is the controller's, not the HTTP stack's). The baseline,
single-event appends to the same store, and a run of ``STEPS`` steps alternate in rounds
(bench/harness.py: A B, B A, ..., the first round discarded), so a neighbour's load hurts
both sides of a round alike. The model client (litellm) is loaded before the clock starts: a
real run loads it once, while its sandbox starts. A 1,000-step session is then read back and
rebuilt into the agent's messages.

The store's floor for a step is measured the same way, interleaved with the same baseline:
an observation appended, heard through a subscription and answered by one single-event
append, with no agent code around it (``floor_steps_per_second``): the controller's
window holds at least that; the same with a prompt message stored by the answer's append, as
the gateway's step stores them (before: a ``put_messages`` round trip of its own); and the
same with `true` run in a local sandbox before each observation, as in the loop, so the
database is idle between steps as it is there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.agent.codeact import CodeActAgent
from app.agent.controller import AgentController, Limits
from app.agent.stuck import StuckConfig
from app.config import Settings
from app.events import LlmCall, LlmResponse, Message, Run, RunOutput, ToolCall
from app.events.canonical import canonical_json
from app.llm import LlmConfig, LlmGateway
from app.runtime import LocalRuntime
from app.runtime.executor import Executor
from app.store import EventStore
from bench.harness import (
    BenchDatabase,
    Measurement,
    bench_arguments,
    command_line,
    interleave,
    measured_on_database,
    median,
    ratio_row,
    report,
)

STEPS = 200
RAW_APPENDS = 300
HISTORY_STEPS = 1000


class InstantModel(LlmGateway):
    """The real gateway (recording, hashing, storing prompts) with a model that answers at once:
    `true` for ``steps`` calls, then finish."""

    def __init__(self, store: EventStore, steps: int) -> None:
        super().__init__(store, LlmConfig(model="openai/instant", native_tool_calling=True))
        self.remaining = steps

    async def _call(self, messages: Any, tools: Any, params: Any) -> Any:
        self.remaining -= 1
        name, arguments = ("execute_bash", '{"command": "true"}')
        if self.remaining < 0:
            name, arguments = ("finish", '{"message": "done"}')
        call = SimpleNamespace(
            id=f"call-{self.remaining}", function=SimpleNamespace(name=name, arguments=arguments)
        )
        message = SimpleNamespace(content=None, tool_calls=[call])
        usage = SimpleNamespace(
            prompt_tokens=10, completion_tokens=5, total_tokens=15, prompt_tokens_details=None
        )
        return SimpleNamespace(
            choices=[SimpleNamespace(message=message, finish_reason="tool_calls")], usage=usage
        )

    def _cost(self, response: Any, usage: Any) -> float | None:
        return 0.0


async def instant_live_run(
    store: EventStore, session: uuid.UUID, workspace: Path, model: InstantModel
) -> float:
    """Seconds the live loop (controller, executor, a local sandbox in ``workspace``) takes to
    run ``session`` (its opening events already appended) with ``model`` until it finishes."""
    runtime = LocalRuntime(workspace)
    await runtime.start()
    await runtime.wait_ready(30)
    executor = asyncio.create_task(Executor(store, session, runtime).run())
    try:
        agent = CodeActAgent(model, str(workspace))
        controller = AgentController(
            store,
            session,
            agent,
            limits=Limits(max_iterations=STEPS + 10),
            stuck=StuckConfig(enabled=False),
        )
        started = time.perf_counter()
        outcome = await controller.run()
        elapsed = time.perf_counter() - started
        assert outcome == "finished", outcome
    finally:
        executor.cancel()
        await asyncio.gather(executor, return_exceptions=True)
        await runtime.close()
    return elapsed


async def steps_per_second(store: EventStore, root: Path) -> tuple[float, float]:
    """(full-loop steps/s, median ms from an observation being recorded to the next action
    being recorded: the controller's own share of a step)."""
    session = uuid.uuid4()
    await store.append(session, [Message(content="run true many times")])
    model = InstantModel(store, STEPS)
    await model.load_client()  # once per process in a real run, while the sandbox starts
    elapsed = await instant_live_run(store, session, root / "ws", model)
    events = await store.read(session)
    reactions = []
    for index, event in enumerate(events):
        if event.kind != "run.output":
            continue
        following = next((e for e in events[index + 1 :] if e.kind in ("run", "finish")), None)
        if following is not None:
            reactions.append((following.created_at - event.created_at).total_seconds() * 1000)
    return (STEPS + 1) / elapsed, median(reactions)


async def floor_steps_per_second(
    store: EventStore, *, with_messages: bool = False, sandbox: LocalRuntime | None = None
) -> float:
    """The store's floor for a controller step: an observation appended, heard through a
    subscription in this process (as the controller hears the executor) and answered by
    exactly one single-event append, no agent code; its rate timed like the controller's
    (1 / median between the two ``created_at``s). ``with_messages``: a new prompt message
    stored by the answer's append (``messages=``), as the gateway's step stores them (before,
    a ``put_messages`` round trip of its own). ``sandbox``: `true` runs in it before each
    observation, as in the loop, so the database sits idle while a process runs, outside the
    timed window (an append after such a pause costs the server more than one in a burst:
    issue 9's seventh pass, in the git history of README.md)."""
    session = uuid.uuid4()
    await store.append(session, [Message(content="go")])
    reactions = []
    async with store.subscribe(session, after_seq=1) as stream:
        seq = 1
        for i in range(STEPS):
            if sandbox is not None:
                await sandbox.execute(Run(command="true"))
            observed = await store.append(
                session, [Message(content=f"observation {i}")], expected_seq=seq
            )
            while (await anext(stream)).seq < observed[0].seq:
                pass
            messages = {}
            if with_messages:
                text = canonical_json({"content": f"observation {i}", "role": "tool"})
                messages[hashlib.sha256(text.encode()).hexdigest()] = text
            answer = await store.append(
                session,
                [Message(content=f"action {i}", source="agent")],
                expected_seq=seq + 1,
                messages=messages,
            )
            while (await anext(stream)).seq < answer[0].seq:
                pass
            seq += 2
            delta = answer[0].created_at - observed[0].created_at
            reactions.append(delta.total_seconds() * 1000)
    return 1000 / median(reactions)


async def raw_appends_per_second(store: EventStore) -> float:
    """Single-event appends per second to a new session (one writer, each awaited)."""
    session = uuid.uuid4()
    samples = []
    for i in range(RAW_APPENDS):
        start = time.perf_counter()
        await store.append(session, [Message(content=f"m{i}")], expected_seq=i)
        samples.append((time.perf_counter() - start) * 1000)
    return 1000 / median(samples)


async def history_rebuild(store: EventStore) -> tuple[float, int]:
    """Seconds to read a 1,000-step session and rebuild its messages; the message count."""
    session = uuid.uuid4()
    await store.append(session, [Message(content="a long task")])
    seq = 1
    for step in range(HISTORY_STEPS):
        arguments = json.dumps({"command": f"echo {step}"})
        response = LlmResponse(
            tool_calls=[ToolCall(id=f"c{step}", name="execute_bash", arguments=arguments)]
        )
        call = LlmCall(model="m", fingerprint=f"f{step}", prompt=[], cause=seq, response=response)
        run = Run(command=f"echo {step}", tool_call_id=f"c{step}", cause=seq + 1)
        output = RunOutput(output=f"{step}\n" * 20, exit_code=0, cause=seq + 2)
        await store.append(session, [call, run, output], expected_seq=seq)
        seq += 3
    agent = CodeActAgent(LlmGateway(store, LlmConfig(model="m")), "/workspace")
    started = time.perf_counter()
    events = await store.read(session)
    messages = agent.messages(events)
    return time.perf_counter() - started, len(messages)


async def run(database: BenchDatabase, rounds: int) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="chronicle-bench-agent-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        async with await EventStore.open(
            database.app, config=settings.store, masker=settings.masker()
        ) as store:
            whole_loop: list[float] = []

            async def controller_steps() -> float:
                rate, reaction_ms = await steps_per_second(store, Path(tmp))
                whole_loop.append(rate)
                return 1000 / reaction_ms

            print(
                f"  ... {rounds} rounds (+1 warm-up): {RAW_APPENDS} raw appends, "
                f"{STEPS} controller steps",
                file=sys.stderr,
                flush=True,
            )
            result = await interleave(
                lambda: raw_appends_per_second(store), controller_steps, rounds=rounds
            )
            print(
                f"  ... {rounds} rounds (+1 warm-up): {RAW_APPENDS} raw appends, {STEPS}"
                " store-only steps (the floor)",
                file=sys.stderr,
                flush=True,
            )
            floor = await interleave(
                lambda: raw_appends_per_second(store),
                lambda: floor_steps_per_second(store),
                rounds=rounds,
            )
            floor_messages = await interleave(
                lambda: raw_appends_per_second(store),
                lambda: floor_steps_per_second(store, with_messages=True),
                rounds=rounds,
            )
            sandbox = LocalRuntime(Path(tmp) / "floor-ws")
            await sandbox.start()
            try:
                await sandbox.wait_ready(30)
                floor_sandbox = await interleave(
                    lambda: raw_appends_per_second(store),
                    lambda: floor_steps_per_second(store, sandbox=sandbox),
                    rounds=rounds,
                )
            finally:
                await sandbox.close()
            print(f"  ... rebuilding a {HISTORY_STEPS}-step session", file=sys.stderr, flush=True)
            seconds, count = await history_rebuild(store)
    kept = whole_loop[1:]  # the warm-up round's run is dropped, as interleave drops its sample
    controller = ratio_row(
        "controller per step (observation in -> next action appended; baseline: raw appends/s)",
        "steps/s",
        result,
        0.5,
        target=">= 0.5x raw single append",
    )
    floor_row = ratio_row(
        "floor: a step with no agent code (observation appended -> heard by a subscriber"
        " -> one single-event append; baseline: raw appends/s)",
        "steps/s",
        floor,
        0.5,
        target="-",
    ).model_copy(update={"met": True})  # a floor, not a target (as the whole loop's row)
    floor_messages_row = ratio_row(
        "floor + a new prompt message stored by the answer's append (as the gateway's step)",
        "steps/s",
        floor_messages,
        0.5,
        target="-",
    ).model_copy(update={"met": True})
    floor_sandbox_row = ratio_row(
        "floor with the sandbox between steps (`true` run before each observation, outside"
        " the timed window)",
        "steps/s",
        floor_sandbox,
        0.5,
        target="-",
    ).model_copy(update={"met": True})
    loop = Measurement(
        name="whole loop incl. local sandbox (model, action, run `true`, observation)",
        unit="steps/s",
        baseline=None,
        chronicle=median(kept),
        ratio=None,
        target="-",
        met=True,
        chronicle_spread=f"{min(kept):,.1f}-{max(kept):,.1f}",
        detail={"rounds": len(kept), "samples": kept},
    )
    rebuild = Measurement(
        name=f"read + rebuild a {HISTORY_STEPS}-step session ({count} messages)", unit="ms",
        baseline=None, chronicle=seconds * 1000, ratio=None, target="< 1000 ms",
        met=seconds < 1,
    )  # fmt: skip
    return [controller, floor_row, floor_messages_row, floor_sandbox_row, loop, rebuild]


def main(argv: list[str] | None = None) -> int:
    args = bench_arguments(__doc__, rounds=5).parse_args(argv)
    machine, rows = measured_on_database(args.url, partial(run, rounds=args.rounds))
    title = "Agent (baseline: raw single-event appends per second, interleaved rounds)"
    how = (
        command_line("agent", args) + f"; {args.rounds} measured rounds after 1"
        f" warm-up, {RAW_APPENDS} single-event appends (median latency as a rate) and a"
        f" {STEPS}-step run alternating; controller rate = 1 / median reaction of a run;"
        " medians and ranges over the rounds, ratio = median of per-round ratios"
    )
    return report("agent", title, rows, as_json=args.json, machine=machine, how=how)


if __name__ == "__main__":
    sys.exit(main())
