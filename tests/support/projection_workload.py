"""A randomized log of many sessions for the projection tests, and what it should project to.

Sessions are appended in interleaved rounds (several sessions at once), so a runner that
follows the log sees events of many sessions mixed in one batch, as in production. The
workload also counts what it wrote (calls, tokens, costs as decimals, errors, final states),
so a test can check the projection against facts that do not come from the projection's own
fold.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from uuid import UUID

from app.store import EventStore

MODELS = ("openai/gpt-4o", "anthropic/claude-sonnet", "openai/local")
#: The controller's ends and the status each gives (status_of in app/projections/session_state).
ENDINGS = (
    ("finished", "", "finished"),
    ("awaiting_user_input", "", "awaiting_user_input"),
    ("stopped", "reached the iteration limit (30)", "limit"),
    ("stopped", "interrupted by SIGINT", "stopped"),
    ("error", "the sandbox died", "error"),
    ("running", "", "working"),
)


@dataclass
class Expected:
    """What one session's row should say, counted while writing it."""

    model: str
    title: str
    events: int = 0
    steps: int = 0
    model_calls: int = 0
    failed_calls: int = 0
    unpriced_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    priced: int = 0
    errors: int = 0
    status: str | None = None


@dataclass
class Workload:
    sessions: dict[UUID, Expected] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return sum(e.events for e in self.sessions.values())


def _session_events(rng: random.Random, expected: Expected) -> list[list[dict[str, Any]]]:
    """The session's events, cut into a few appends."""
    chunks: list[list[dict[str, Any]]] = [
        [
            {
                "kind": "session.created",
                "title": expected.title,
                "config": {"agent": "codeact", "model": expected.model, "runtime": "local"},
            },
            {"kind": "message", "content": "do the thing", "source": "user"},
            {"kind": "agent.state", "state": "running"},
        ]
    ]
    seq = 3
    for _ in range(rng.randint(0, 6)):
        chunk: list[dict[str, Any]] = []
        prompt, completion = rng.randint(10, 5000), rng.randint(1, 800)
        call: dict[str, Any] = {
            "kind": "llm.call",
            "model": expected.model,
            "fingerprint": "f",
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
            "latency_ms": rng.uniform(50, 3000),
        }
        expected.model_calls += 1
        if rng.random() < 0.1:
            call["error"] = "rate limited for good"
            call["usage"] = {}
            expected.failed_calls += 1
        else:
            expected.input_tokens += prompt
            expected.output_tokens += completion
            if expected.model == "openai/local":
                expected.unpriced_calls += 1
            else:
                cost = round(rng.uniform(0.0001, 0.05), 6)
                call["cost_usd"] = cost
                expected.cost += Decimal(repr(cost))
                expected.priced += 1
        chunk.append(call)
        seq += 1
        if "error" not in call:
            chunk.append({"kind": "run", "command": f"echo {seq}"})
            seq += 1
            expected.steps += 1
            if rng.random() < 0.2:
                chunk.append({"kind": "error", "message": "could not run it", "cause": seq})
                expected.errors += 1
            else:
                chunk.append({"kind": "run.output", "output": "ok", "exit_code": 0, "cause": seq})
            seq += 1
        chunks.append(chunk)
    state, reason, status = rng.choice(ENDINGS)
    chunks.append([{"kind": "agent.state", "state": state, "reason": reason}])
    expected.status = status
    expected.events = sum(len(c) for c in chunks)
    return chunks


async def append_workload(
    store: EventStore, sessions: int, *, seed: int, concurrency: int = 8
) -> Workload:
    """Append ``sessions`` random sessions, ``concurrency`` at a time, chunks interleaved."""
    rng = random.Random(seed)
    workload = Workload()
    plans = []
    for n in range(sessions):
        session = uuid.UUID(int=rng.getrandbits(128), version=4)
        expected = Expected(model=rng.choice(MODELS), title=f"task {n} " + "é" * rng.randint(0, 3))
        workload.sessions[session] = expected
        plans.append((session, _session_events(rng, expected)))

    async def write(session: UUID, chunks: list[list[dict[str, Any]]]) -> None:
        for chunk in chunks:
            await store.append(session, chunk)
            await asyncio.sleep(0)

    for start in range(0, len(plans), concurrency):
        await asyncio.gather(*(write(s, c) for s, c in plans[start : start + concurrency]))
    return workload
