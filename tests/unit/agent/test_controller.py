"""The controller's loop on a ``MemoryLog`` with a scripted model: what it appends and how a
run ends, without a database, a sandbox or a model server (the decisions alone are in
test_decisions.py)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from app.agent.codeact import CodeActAgent
from app.agent.controller import AgentController, Limits
from app.agent.driving import drive
from app.events import (
    Action,
    AgentState,
    Annotation,
    LlmCall,
    LlmResponse,
    Message,
    Observation,
    RunOutput,
    ToolCall,
)
from app.events.base import Service
from app.llm import LlmError, LlmReply
from app.llm.retry import Failure
from app.store import ActionWorker, MemoryLog, RecordedEvent, ServiceFailed

#: A script's entry for a model that never answers (until the run is cancelled).
SILENT = None


class ScriptedModel:
    """A ``ModelGateway`` that answers each call with the next reply of its script (a
    ``LlmResponse``, an ``LlmError`` to raise, or ``SILENT``)."""

    def __init__(self, *script: LlmResponse | LlmError | None) -> None:
        self.script = list(script)
        self.calls = 0

    async def complete(
        self,
        session_id: uuid.UUID,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        cause: int | None = None,
        on_retry: Callable[[Failure, float], Awaitable[None]] | None = None,
        record: bool = True,
        previous: Mapping[str, Any] | None = None,
    ) -> LlmReply:
        self.calls += 1
        reply = self.script.pop(0)
        if reply is SILENT:
            await asyncio.Event().wait()  # nobody sets it: cancelled with the run
        if isinstance(reply, LlmError):
            raise reply
        assert reply is not None
        call = LlmCall(model="m", fingerprint=f"f{self.calls}", response=reply, cost_usd=0.5)
        return LlmReply(
            call=call,
            event=None,
            content=reply.content,
            tool_calls=reply.tool_calls,
            finish_reason=reply.finish_reason,
        )


def tool(name: str, **arguments: Any) -> LlmResponse:
    call = ToolCall(id=f"call-{uuid.uuid4()}", name=name, arguments=json.dumps(arguments))
    return LlmResponse(tool_calls=[call], finish_reason="tool_calls")


def said(content: str) -> LlmResponse:
    return LlmResponse(content=content, finish_reason="stop")


async def session(log: MemoryLog, *events: Any) -> uuid.UUID:
    session_id = uuid.uuid4()
    await log.append(session_id, [Message(content="do it", source="user"), *events])
    return session_id


def controller(
    log: MemoryLog, session_id: uuid.UUID, model: ScriptedModel, **limits: Any
) -> AgentController:
    agent = CodeActAgent(model, "/workspace")
    return AgentController(log, session_id, agent, limits=Limits(**limits), stop_when_paused=True)


def states(events: list[RecordedEvent]) -> list[tuple[str, str]]:
    return [
        (e.payload["state"], e.payload.get("reason", ""))
        for e in events
        if e.kind == "agent.state" and e.source == "agent"
    ]


async def test_a_finish_call_ends_the_run_finished() -> None:
    log = MemoryLog()
    session_id = await session(log)
    model = ScriptedModel(tool("finish", message="done"))
    assert await controller(log, session_id, model).run() == "finished"
    events = await log.read(session_id)
    assert [e.kind for e in events] == [
        "message",
        "agent.state",
        "agent.state",
        "llm.call",
        "finish",
        "agent.state",
    ]
    assert events[4].cause == events[3].seq
    assert states(events) == [
        ("loading", "reading the session"),
        ("running", ""),
        ("finished", "the agent called finish"),
    ]


async def test_a_message_to_the_user_awaits_the_user() -> None:
    log = MemoryLog()
    session_id = await session(log)
    model = ScriptedModel(said("which file?"))
    assert await controller(log, session_id, model).run() == "awaiting_user_input"
    assert states(await log.read(session_id))[-1] == (
        "awaiting_user_input",
        "the agent asked for your input",
    )


class Echo:
    """An action handler that answers every command with its own text."""

    service: Service = "sandbox"
    name = "executor"
    title = "the executor"

    async def handle(self, action: Action) -> Observation:
        return RunOutput(output=getattr(action, "command", ""), exit_code=0)


async def test_an_action_is_waited_for_and_its_answer_given_to_the_model() -> None:
    log = MemoryLog()
    session_id = await session(log)
    model = ScriptedModel(tool("execute_bash", command="echo hi"), tool("finish", message="ok"))
    workers = {"executor": ActionWorker(log, session_id, Echo()).run()}
    assert await drive(log, session_id, controller(log, session_id, model), workers) == "finished"
    events = await log.read(session_id)
    run = next(e for e in events if e.kind == "run")
    answer = next(e for e in events if e.kind == "run.output")
    assert (answer.cause, answer.payload["output"]) == (run.seq, "echo hi")
    assert answer.seq < [e.seq for e in events if e.kind == "llm.call"][1]
    assert model.calls == 2


class Gone:
    """An action handler whose sandbox is gone."""

    service: Service = "sandbox"
    name = "executor"
    title = "the executor"

    async def handle(self, action: Action) -> Observation:
        raise ServiceFailed("the sandbox is gone")


async def test_a_worker_that_stops_ends_the_run_in_error_saying_why() -> None:
    log = MemoryLog()
    session_id = await session(log)
    # The controller may take the error in and ask again before the worker's stop is seen.
    model = ScriptedModel(tool("execute_bash", command="ls"), SILENT)
    workers = {"executor": ActionWorker(log, session_id, Gone()).run()}
    assert await drive(log, session_id, controller(log, session_id, model), workers) == "error"
    events = await log.read(session_id)
    answer = next(e for e in events if e.kind == "error" and e.source == "environment")
    assert (answer.payload["message"], answer.payload["error_type"]) == (
        "the sandbox is gone",
        "unavailable",
    )
    assert states(events)[-1] == ("error", "the sandbox is gone")


async def test_the_iteration_limit_stops_before_the_model_is_asked() -> None:
    log = MemoryLog()
    session_id = await session(log)
    model = ScriptedModel(tool("think", thought="hmm"), tool("finish", message="never"))
    assert await controller(log, session_id, model, max_iterations=1).run() == "stopped"
    assert model.calls == 1
    assert states(await log.read(session_id))[-1][1].startswith("reached the iteration limit (1)")


async def test_the_cost_limit_stops_with_what_was_spent() -> None:
    log = MemoryLog()
    session_id = await session(log)
    model = ScriptedModel(tool("think", thought="a"), tool("think", thought="b"))
    assert await controller(log, session_id, model, max_cost_usd=1.0).run() == "stopped"
    assert model.calls == 2  # 0.5 each
    assert "spent $1.0000" in states(await log.read(session_id))[-1][1]


async def test_a_failed_model_call_ends_in_error_saying_why() -> None:
    log = MemoryLog()
    session_id = await session(log)
    model = ScriptedModel(LlmError("auth", "the API key was refused"))
    assert await controller(log, session_id, model).run() == "error"
    assert states(await log.read(session_id))[-1] == (
        "error",
        "the model call failed: the API key was refused",
    )


async def test_a_context_window_error_condenses_and_goes_on() -> None:
    log = MemoryLog()
    session_id = await session(log)
    model = ScriptedModel(
        tool("think", thought="a"),
        tool("think", thought="b"),
        LlmError("context_window", "too long"),
        tool("finish", message="done"),
    )
    assert await controller(log, session_id, model).run() == "finished"
    events = await log.read(session_id)
    [condensation] = [e for e in events if e.kind == "agent.condensation"]
    calls = [e.seq for e in events if e.kind == "llm.call"]
    assert condensation.payload["forget_before"] == calls[1]


async def test_the_users_stop_ends_the_run_without_a_model_call() -> None:
    log = MemoryLog()
    session_id = await session(log, AgentState(state="stopped", source="user"))
    model = ScriptedModel()
    assert await controller(log, session_id, model).run() == "stopped"
    assert states(await log.read(session_id))[-1] == ("stopped", "stopped by the user")
    assert model.calls == 0


async def test_the_users_pause_ends_a_run_told_to_stop_when_paused() -> None:
    log = MemoryLog()
    session_id = await session(log, AgentState(state="paused", source="user"))
    assert await controller(log, session_id, ScriptedModel()).run() == "paused"
    assert states(await log.read(session_id))[-1] == ("paused", "paused by the user")


async def test_a_recorded_call_is_continued_without_asking_the_model_again() -> None:
    """A process that stopped after recording a call, before its actions: the next one turns
    the recorded reply into them."""
    log = MemoryLog()
    reply = tool("finish", message="done")
    call = LlmCall(model="m", fingerprint="f", response=reply)
    session_id = await session(log, call)
    model = ScriptedModel()
    assert await controller(log, session_id, model).run() == "finished"
    events = await log.read(session_id)
    assert [e.kind for e in events if e.kind in ("llm.call", "finish")] == ["llm.call", "finish"]
    assert model.calls == 0


async def test_an_annotation_is_nothing_the_agent_acts_on() -> None:
    """A reviewer's annotation after the agent asked the user (here the worker died before it
    recorded the state that says so): the agent still awaits the user, the model is not asked
    again, and the annotation is in no prompt."""
    log = MemoryLog()
    session_id = await session(log, AgentState(state="running", source="agent"))
    call = LlmCall(model="m", fingerprint="f1", response=said("which file?"))
    [recorded] = await log.append(session_id, [call])
    asked = Message(content="which file?", source="agent", cause=recorded.seq)
    await log.append(session_id, [asked])
    await log.append(
        session_id, [Annotation(label="wrong answer", target_seq=recorded.seq, user="ada")]
    )
    model = ScriptedModel(said("SHOULD NOT BE ASKED"))
    assert await controller(log, session_id, model).run() == "awaiting_user_input"
    assert model.calls == 0
    assert states(await log.read(session_id))[-1][0] == "awaiting_user_input"
