"""Steering a running session, condensation, overdue actions."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from app.agent.codeact import CodeActAgent
from app.agent.controller import AgentController, Limits
from app.events import AgentState, Message, Run
from app.llm import LlmConfig, LlmGateway
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.waiting import wait_for_event


async def test_pause_then_resume_then_stop(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo one")], delay=0.5),
        Reply(tool_calls=[tool_call("execute_bash", command="echo two")]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo three")], delay=0.5),
    )
    settings = settings_for(fake_llm, tmp_path)
    session = uuid.uuid4()

    async def pause_soon() -> None:  # while the first model call is in flight
        await fake_llm.wait_until(lambda fake: len(fake.requests) >= 1)
        await store.append(session, [AgentState(state="paused", source="user")])

    pausing = asyncio.create_task(pause_soon())
    _, outcome = await run_session(
        store,
        settings,
        SessionOptions(workspace=tmp_path / "ws"),
        task="Count.",
        session_id=session,
    )
    await pausing
    assert outcome == "paused"
    assert len(fake_llm.requests) == 1  # the step in flight finished, no new one started

    paused_at = await store.last_seq(session)

    async def stop_soon() -> None:  # once the resumed session runs
        await wait_for_event(
            store,
            session,
            lambda e: e.kind == "agent.state" and e.payload["state"] == "running",
            after_seq=paused_at,
        )
        await store.append(session, [AgentState(state="stopped", source="user")])

    stopping = asyncio.create_task(stop_soon())
    _, outcome = await run_session(store, settings, SessionOptions(), session_id=session)
    await stopping
    assert outcome == "stopped"
    states = [
        (e.source, e.payload["state"]) for e in await store.read(session) if e.kind == "agent.state"
    ]
    assert ("user", "paused") in states and ("agent", "paused") in states
    assert ("user", "running") in states  # resume lifted the pause
    assert states[-1] == ("agent", "stopped")


async def test_context_window_overflow_condenses_and_goes_on(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    overflow = Reply(status=400, error_code="context_length_exceeded",
                     error="This model's maximum context length is 100 tokens.")  # fmt: skip
    fake_llm.script(
        *[Reply(tool_calls=[tool_call("execute_bash", command=f"echo step{i}")]) for i in range(4)],
        overflow,
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    session, outcome = await run_session(
        store,
        settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws"),
        task="Go.",
    )
    assert outcome == "finished"
    events = await store.read(session)
    [condensed] = [e for e in events if e.kind == "agent.condensation"]
    assert condensed.payload["forgotten_calls"] == 2
    last_prompt = json.dumps(fake_llm.requests[-1]["messages"])
    assert "step0" not in last_prompt and "step3" in last_prompt
    assert "condensed" in last_prompt and "Go." in last_prompt


async def test_an_action_nobody_answers_gets_an_error(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="ok")]))
    session = uuid.uuid4()
    await store.append(session, [Message(content="go"), Run(command="never answered", timeout=0.2)])
    config = LlmConfig(model="openai/fake-model", base_url=fake_llm.base_url, api_key="k",
                       native_tool_calling=True)  # fmt: skip
    agent = CodeActAgent(LlmGateway(store, config), str(tmp_path))
    controller = AgentController(
        store, session, agent, limits=Limits(pending_grace=0.3, default_action_timeout=0.2)
    )
    async with asyncio.timeout(20):
        outcome = await controller.run()  # no executor runs: the action stays unanswered
    assert outcome == "finished"
    error = next(e for e in await store.read(session) if e.kind == "error")
    assert error.cause == 2 and "no result after" in error.payload["message"]


async def test_rate_limit_shows_as_a_state_then_goes_on(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(status=429, headers={"Retry-After": "0.3"}, error="Rate limit reached"),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    session, outcome = await run_session(
        store,
        settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws"),
        task="Go.",
    )
    assert outcome == "finished"
    states = [e.payload["state"] for e in await store.read(session) if e.kind == "agent.state"]
    assert states == ["loading", "running", "rate_limited", "finished"]
