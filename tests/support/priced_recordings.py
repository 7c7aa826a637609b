"""A recorded session whose model calls have usage and a price, and a real replay of it: what
the spend tests (analytics views, session_state) count once, in the recording only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from app.events import ErrorObservation, LlmCall, LlmResponse, LlmUsage, ToolCall
from app.replay import replay
from app.store import EventStore
from tests.support.written_sessions import Recorder


@dataclass
class PricedReplay:
    """The recording, its replay, and what the recording's calls spent."""

    recorded: UUID
    replayed: UUID
    model: str
    costs: list[float] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    errors: int = 0


async def priced_call(
    recorder: Recorder,
    tools: list[tuple[str, dict[str, Any]]],
    *,
    cost: float,
    prompt_tokens: int,
    completion_tokens: int,
) -> list[int]:
    """``Recorder.call`` with usage and a cost, as a priced model's call is recorded."""
    events = await recorder.store.read(recorder.session)
    request = recorder.gateway.prepare(recorder.agent.messages(events), recorder.agent.tools())
    await recorder.gateway.store_prompt(request)
    recorder.calls += 1
    tool_calls = [
        ToolCall(id=f"call_{recorder.calls}_{i}", name=name, arguments=json.dumps(arguments))
        for i, (name, arguments) in enumerate(tools)
    ]
    call = LlmCall(
        model=recorder.llm.model,
        params={**request.params, "base_url": recorder.llm.base_url},
        fingerprint=request.fingerprint,
        prompt=request.prompt,
        tools=request.tools_hash,
        response=LlmResponse(tool_calls=tool_calls, finish_reason="tool_calls"),
        usage=LlmUsage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        ),
        cost_usd=cost,
        latency_ms=800.0,
    )
    seq = events[-1].seq + 1
    recorded = await recorder.append(call, *recorder.agent.consequences(call.payload(), seq))
    return [event.seq for event in recorded[1:]]


async def record_and_replay(store: EventStore) -> PricedReplay:
    """Three priced calls (a run that fails, a run answered by an error, finish), then a
    replay that matches the recording: every call and observation of it served."""
    recorder = Recorder(store)
    await recorder.start()
    await recorder.state("running")
    spent = PricedReplay(recorded=recorder.session, replayed=recorder.session, model="")
    spent.model = recorder.llm.model
    steps: list[tuple[str, dict[str, Any], float, int, int]] = [
        ("execute_bash", {"command": "pytest -q"}, 0.03, 1000, 200),
        ("execute_bash", {"command": "pytest -q -x"}, 0.05, 1500, 300),
        ("finish", {"message": "fixed"}, 0.0125, 1800, 40),
    ]
    for index, (tool, arguments, cost, prompt_tokens, completion_tokens) in enumerate(steps):
        seqs = await priced_call(
            recorder,
            [(tool, arguments)],
            cost=cost,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
        spent.costs.append(cost)
        spent.input_tokens += prompt_tokens
        spent.output_tokens += completion_tokens
        if index == 0:
            await recorder.output(seqs[0], "1 failed", exit_code=1)
        elif index == 1:
            await recorder.append(
                ErrorObservation(
                    message="the sandbox went away", error_type="sandbox", cause=seqs[0]
                )
            )
            spent.errors += 1
    await recorder.state("finished", "the agent called finish")
    result = await replay(store, recorder.session)
    assert result.matched, result.divergence
    assert result.steps_served == len(steps)
    spent.replayed = result.session_id
    return spent
