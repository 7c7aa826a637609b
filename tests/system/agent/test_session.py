"""Complete coding sessions: the real controller, a real sandbox, litellm against a fake model."""

from __future__ import annotations

import json
from pathlib import Path

from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.recordings import record


async def test_write_run_fail_fix_run_finish(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    session = await record(store, fake_llm, tmp_path)  # asserts the run finished
    workspace = tmp_path / "ws"
    assert (workspace / "hello.py").read_text() == "print('hello')\n"
    events = await store.read(session)
    kinds = [e.kind for e in events]
    assert kinds[:2] == ["session.created", "message"]
    assert kinds.count("llm.call") == 5
    outputs = [e.payload for e in events if e.kind == "run.output"]
    assert outputs[0]["exit_code"] == 1 and "ZeroDivisionError" in outputs[0]["output"]
    assert outputs[1]["exit_code"] == 0 and outputs[1]["output"] == "hello\n"
    assert events[-2].kind == "agent.state" and events[-2].payload["state"] == "finished"
    assert events[-1].kind == "workspace.diff"  # what the run changed, recorded last
    # Every action points at the model call that produced it, and carries its tool_call_id.
    for action in (e for e in events if e.kind in ("run", "file.edit", "finish")):
        assert action.cause is not None and events[action.cause - 1].kind == "llm.call"
        assert action.payload["tool_call_id"]
    # The model saw the failure before it fixed it.
    third = json.dumps(fake_llm.requests[2]["messages"])
    assert "ZeroDivisionError" in third
    created = events[0].payload["config"]
    assert created["model"] == "openai/fake-model" and created["runtime"] == "local"
    assert "sk-fake" not in json.dumps([e.payload for e in events])
    assert (await store.verify(session)).ok


async def test_bad_tool_call_is_an_error_the_model_sees_then_recovers(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[{"name": "execute_bash", "arguments": "{not json"}]),
        Reply(tool_calls=[tool_call("teleport", where="mars")]),
        Reply(tool_calls=[tool_call("execute_bash", timeout=3)]),  # missing command
        Reply(tool_calls=[tool_call("execute_bash", command="echo recovered")]),
        Reply(tool_calls=[tool_call("finish", message="ok")]),
    )
    session, outcome = await run_session(
        store, settings_for(fake_llm, tmp_path), SessionOptions(workspace=tmp_path / "ws"),
        task="Say something.",
    )  # fmt: skip
    assert outcome == "finished"
    errors = [e.payload["message"] for e in await store.read(session) if e.kind == "error"]
    assert "not valid JSON" in errors[0]
    assert "no tool 'teleport'" in errors[1]
    assert "command" in errors[2]
    assert "not valid JSON" in json.dumps(fake_llm.requests[1]["messages"])


async def test_agent_question_waits_for_the_user(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(content="Which file should I change?"),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    settings = settings_for(fake_llm, tmp_path)
    options = SessionOptions(workspace=tmp_path / "ws")
    session, outcome = await run_session(store, settings, options, task="Fix the bug.")
    assert outcome == "awaiting_user_input"
    _, outcome = await run_session(
        store, settings, SessionOptions(), task="main.py", session_id=session
    )
    assert outcome == "finished"
    assert "main.py" in json.dumps(fake_llm.requests[1]["messages"])


async def test_401_gives_an_error_state_and_no_retry(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(Reply(status=401, error="Incorrect API key provided"), Reply(content="never"))
    session, outcome = await run_session(
        store,
        settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws"),
        task="Hi",
    )
    assert outcome == "error" and len(fake_llm.requests) == 1
    state = [e for e in await store.read(session) if e.kind == "agent.state"][-1]
    assert state.payload["state"] == "error" and "CHRONICLE_LLM_API_KEY" in state.payload["reason"]


async def test_iteration_and_cost_limits_stop_and_can_be_raised(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    counting = [
        Reply(tool_calls=[tool_call("execute_bash", command=f"echo {i}")]) for i in range(3)
    ]
    fake_llm.script(*counting, Reply(tool_calls=[tool_call("finish", message="done")]))
    settings = settings_for(fake_llm, tmp_path)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=tmp_path / "ws", max_iterations=2), task="Count."
    )
    assert outcome == "stopped"
    state = [e for e in await store.read(session) if e.kind == "agent.state"][-1]
    assert "iteration limit (2)" in state.payload["reason"]
    _, outcome = await run_session(
        store, settings, SessionOptions(max_iterations=10), session_id=session
    )
    assert outcome == "finished"

    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo spend")], prompt_tokens=100_000)
    )
    priced = settings_for(fake_llm, tmp_path, llm_input_cost_per_token=0.00001)
    other, outcome = await run_session(
        store, priced, SessionOptions(workspace=tmp_path / "ws2", max_cost_usd=0.5), task="Spend."
    )
    assert outcome == "stopped"
    state = [e for e in await store.read(other) if e.kind == "agent.state"][-1]
    assert "cost limit" in state.payload["reason"]


async def test_stuck_agent_is_stopped(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        *[Reply(tool_calls=[tool_call("execute_bash", command="ls missing")]) for _ in range(10)]
    )
    session, outcome = await run_session(
        store,
        settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws"),
        task="Loop.",
    )
    assert outcome == "error"
    state = [e for e in await store.read(session) if e.kind == "agent.state"][-1]
    assert "stuck" in state.payload["reason"] and "same action" in state.payload["reason"]
    assert len(fake_llm.requests) == 4


async def test_prompt_based_tool_calling_session(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(
            content=(
                "<function=execute_bash>\n<parameter=command>echo via-text</parameter>\n</function>"
            )
        ),
        Reply(content="<function=finish>\n<parameter=message>done</parameter>\n</function>"),
    )
    settings = settings_for(fake_llm, tmp_path).model_copy(
        update={"llm_native_tool_calling": False}
    )
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=tmp_path / "ws"), task="Echo."
    )
    assert outcome == "finished"
    outputs = [e.payload["output"] for e in await store.read(session) if e.kind == "run.output"]
    assert outputs == ["via-text\n"]
    assert "EXECUTION RESULT" in json.dumps(fake_llm.requests[1]["messages"])
