"""Fixtures for the analytics tests: a login in chronicle_analyst, and a known workload
recorded through the event store (the application's login, validated events, real times).

The workload's numbers are chosen (models, tokens, costs, latencies, exit codes) or measured
by the database (tool durations: observation time - action time); the tests compute what
each query must answer from the recorded events themselves, in Python, and compare.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest

from app.events import (
    AgentState,
    ErrorObservation,
    Event,
    FileRead,
    FileReadOutput,
    LlmCall,
    McpCall,
    McpResult,
    Message,
    Run,
    RunOutput,
    SessionCreated,
)
from app.events.llm import LlmResponse, LlmUsage
from app.store import EventStore, RecordedEvent
from tests.support.analyst_login import analyst_login
from tests.support.postgres import ServerAddress

ITERATION_LIMIT = "reached the iteration limit (3); raise --max-iterations and resume to continue"


@pytest.fixture
def analyst_database_url(database_url: str, pg_address: ServerAddress) -> Iterator[str]:
    """A login that is a member of chronicle_analyst only, on this test's database."""
    with analyst_login(database_url, pg_address) as url:
        yield url


@dataclass
class Workload:
    """What was recorded: every session's events as the store gave them back."""

    sessions: dict[uuid.UUID, list[RecordedEvent]] = field(default_factory=dict)
    titles: dict[uuid.UUID, str] = field(default_factory=dict)

    def events(self, kind: str | None = None) -> list[RecordedEvent]:
        return [
            event
            for events in self.sessions.values()
            for event in events
            if kind is None or event.kind == kind
        ]


def _call(model: str, prompt: int, completion: int, cost: float | None, latency: float,
          *, error: str | None = None, cached: int = 0) -> LlmCall:  # fmt: skip
    return LlmCall(
        model=model,
        fingerprint="f" * 64,
        response=LlmResponse(
            content=None if error else "ok", finish_reason=None if error else "stop"
        ),
        usage=LlmUsage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            total_tokens=prompt + completion,
        ),
        cost_usd=cost,
        latency_ms=latency,
        attempts=2 if error else 1,
        error=error,
        error_kind="rate_limit" if error else None,
    )


async def _tool(
    store: EventStore, session: uuid.UUID, action: Event, answer: Event, pause: float
) -> None:
    """The action, then after ``pause`` seconds the observation that answers it."""
    [recorded] = await store.append(session, [action], expected_seq=await store.last_seq(session))
    await asyncio.sleep(pause)
    await store.append(
        session,
        [answer.model_copy(update={"cause": recorded.seq})],
        expected_seq=recorded.seq,
    )


async def record_workload(store: EventStore) -> Workload:
    """Four sessions over two models: tool calls that succeed, fail, time out and raise; a
    failed, an unpriced and cached-token model calls; one run stopped by its iteration
    limit, one by an error."""
    workload = Workload()
    specs = [
        ("fix the tests", "openai/gpt-4o", "iterations"),
        ("write the docs", "anthropic/claude-sonnet-4", "finished"),
        ("refactor the store", "openai/gpt-4o", "error"),
        ("tiny question", "anthropic/claude-sonnet-4", "iterations"),
    ]
    pause = 0.01
    for index, (title, model, ending) in enumerate(specs):
        session = uuid.uuid4()
        workload.titles[session] = title
        await store.append(
            session,
            [
                SessionCreated(title=title, config={"agent": "test", "model": model}),
                Message(content=title),
                AgentState(state="running"),
                _call(
                    model,
                    1000 + 100 * index,
                    200 + 10 * index,
                    0.01 * (index + 1),
                    400.0 + 50 * index,
                    cached=100 * index,
                ),
                _call(model, 1500, 300, None if index == 1 else 0.02, 900.0 + 100 * index),
            ],
            expected_seq=0,
        )
        if index == 2:
            await store.append(
                session,
                [_call(model, 0, 0, None, 30000.0, error="429 Too Many Requests")],
                expected_seq=await store.last_seq(session),
            )
        await _tool(store, session, Run(command=f"pytest -x tests/{index}"),
                    RunOutput(output="1 failed", exit_code=1), pause)  # fmt: skip
        pause += 0.015
        await _tool(store, session, Run(command="ls"), RunOutput(output="a\n", exit_code=0), pause)
        pause += 0.015
        await _tool(store, session, FileRead(path=f"src/m{index}.py"),
                    FileReadOutput(path=f"src/m{index}.py", content="x = 1\n"), pause)  # fmt: skip
        pause += 0.015
        if index % 2 == 0:
            await _tool(store, session, Run(command="sleep 999"),
                        RunOutput(output="", exit_code=None, timed_out=True), pause)  # fmt: skip
            pause += 0.015
            failure = ErrorObservation(message="server went away", error_type="mcp")
            await _tool(store, session, McpCall(server="git", tool="git_status"), failure, pause)
            pause += 0.015
        else:
            await _tool(store, session, McpCall(server="git", tool="git_log"),
                        McpResult(content=[{"type": "text", "text": "log"}]), pause)  # fmt: skip
            pause += 0.015
        state = {
            "iterations": AgentState(state="stopped", reason=ITERATION_LIMIT),
            "finished": AgentState(state="finished", reason="the agent called finish"),
            "error": AgentState(state="error", reason="the agent looks stuck: same command"),
        }[ending]
        await store.append(session, [state], expected_seq=await store.last_seq(session))
        workload.sessions[session] = await store.read(session)
    return workload


@pytest.fixture
async def workload(store: EventStore) -> AsyncIterator[Workload]:
    yield await record_workload(store)
