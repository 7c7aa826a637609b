"""Every kind of session the agent tests record replays to a match with no override: invalid
tool calls, a question and its answer, an iteration limit raised on resume, a rate-limited
call, a context-window overflow and its condensation, MCP calls with an image, and a run
interrupted mid-action and resumed. Each is recorded here the way the agent tests record it,
then replayed with the model server stopped."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from uuid import UUID

from app.replay import replay
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.mcp_echo_server import stdio_config
from tests.support.waiting import until


async def replays_to_a_match(store: EventStore, session: UUID, fake: FakeLlmServer) -> None:
    fake.stop()
    recorded_calls = [e for e in await store.read(session) if e.kind == "llm.call"]
    result = await replay(store, session)
    assert result.matched, result.divergence
    assert result.model_calls == 0 and result.outcome == result.recorded_outcome
    assert result.steps_matched == result.steps_served == result.steps_recorded
    assert result.steps_recorded == len(
        [c for c in recorded_calls if c.payload.get("error_kind") != "interrupted"]
    )
    assert (await store.verify(result.session_id)).ok


async def test_invalid_tool_calls_then_recovery(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[{"name": "execute_bash", "arguments": "{not json"}]),
        Reply(tool_calls=[tool_call("teleport", where="mars")]),
        Reply(tool_calls=[tool_call("execute_bash", timeout=3)]),  # missing command
        Reply(content=""),  # an empty reply
        Reply(
            tool_calls=[
                tool_call("execute_bash", command="echo recovered"),
                tool_call("think", thought="that worked"),
            ]
        ),
        Reply(tool_calls=[tool_call("finish", message="ok")]),
    )
    session, outcome = await run_session(
        store,
        settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws"),
        task="Say something.",
    )
    assert outcome == "finished"
    await replays_to_a_match(store, session, fake_llm)


async def test_a_question_answered_on_resume(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(content="Which file should I change?"),
        Reply(tool_calls=[tool_call("execute_bash", command="echo main.py")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    settings = settings_for(fake_llm, tmp_path)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=tmp_path / "ws"), task="Fix the bug."
    )
    assert outcome == "awaiting_user_input"
    _, outcome = await run_session(
        store, settings, SessionOptions(), task="main.py", session_id=session
    )
    assert outcome == "finished"
    await replays_to_a_match(store, session, fake_llm)


async def test_an_iteration_limit_raised_on_resume(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        *[Reply(tool_calls=[tool_call("execute_bash", command=f"echo {i}")]) for i in range(3)],
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    settings = settings_for(fake_llm, tmp_path)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=tmp_path / "ws", max_iterations=2), task="Count."
    )
    assert outcome == "stopped"
    _, outcome = await run_session(
        store, settings, SessionOptions(max_iterations=10), session_id=session
    )
    assert outcome == "finished"
    await replays_to_a_match(store, session, fake_llm)


async def test_a_rate_limited_call_and_a_condensation(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    overflow = Reply(
        status=400,
        error_code="context_length_exceeded",
        error="This model's maximum context length is 100 tokens.",
    )
    fake_llm.script(
        Reply(status=429, headers={"Retry-After": "0.1"}, error="Rate limit reached"),
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
    kinds = [e.kind for e in await store.read(session)]
    assert "agent.condensation" in kinds
    await replays_to_a_match(store, session, fake_llm)


async def test_mcp_calls_with_an_image(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("echo__picture"), tool_call("echo__weather", city="Oslo")]),
        Reply(tool_calls=[tool_call("finish", message="saw it")]),
    )
    session, outcome = await run_session(
        store,
        settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws", mcp_servers=[stdio_config()]),
        task="Look at the picture and the weather.",
    )
    assert outcome == "finished"
    await replays_to_a_match(store, session, fake_llm)


async def test_a_run_interrupted_mid_action_and_resumed(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    slow = "echo started >> log.txt && sleep 30"
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command=slow, timeout=60)]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo after")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    settings = settings_for(fake_llm, tmp_path)
    session = uuid.uuid4()
    running = asyncio.create_task(
        run_session(
            store,
            settings,
            SessionOptions(workspace=workspace),
            task="Log a line.",
            session_id=session,
        )
    )
    log = workspace / "log.txt"
    await until(
        lambda: log.exists() and "started" in log.read_text(),
        timeout=60,
        what="the slow command running",
    )
    running.cancel("interrupted by SIGINT")
    with contextlib.suppress(asyncio.CancelledError):
        await running
    _, outcome = await run_session(store, settings, SessionOptions(), session_id=session)
    assert outcome == "finished"
    answers = [e.payload for e in await store.read(session) if e.kind == "error"]
    assert answers and answers[0]["error_type"] == "interrupted"
    await replays_to_a_match(store, session, fake_llm)
