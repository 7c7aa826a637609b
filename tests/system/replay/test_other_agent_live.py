"""Another registered agent live: ``chronicle run --agent NAME``, ``chronicle fork --agent NAME``
and ``chronicle replay --agent NAME --on-divergence fork`` run the named agent against the
scripted model server, record it, and a replay of what they recorded uses it again.

Before the runner took an agent, ``--on-divergence fork`` with ``--agent`` was refused (exit
2) and ``chronicle run`` had no ``--agent``: each assertion on the model's request below
(the shell agent's prompt and two tools) failed, as the fork ran CodeAct.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from uuid import UUID

import pytest

from app.agent.shell_only import SYSTEM_PROMPT
from app.replay import AgentConfig, replay
from app.sessions.runner import SessionError, SessionOptions, run_session
from app.store import EventStore, RecordedEvent
from tests.support.agent_cli import agent_environment
from tests.support.agent_session import settings_for
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

SHELL_TOOLS = ["execute_bash", "finish"]


def _tool_names(request: dict[str, object]) -> list[str]:
    tools = request["tools"]
    assert isinstance(tools, list)
    return [tool["function"]["name"] for tool in tools]


async def _record_codeact(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, name: str = "ws"
) -> tuple[UUID, list[RecordedEvent]]:
    workspace = tmp_path / name
    workspace.mkdir()
    (workspace / "input.txt").write_text("first\n")
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="cat input.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    settings = settings_for(fake_llm, tmp_path)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=workspace), task="look around"
    )
    assert outcome == "finished"
    return session, await store.read(session)


async def test_replay_with_another_agent_forks_live_with_that_agent(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    source, recorded = await _record_codeact(store, fake_llm, tmp_path)
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="the shell agent's turn")]))
    before = len(fake_llm.requests)
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    done = chronicle(
        "replay", str(source), "--agent", "shell-only", "--on-divergence", "fork", env=env
    )
    assert done.returncode == 3, done.stdout + done.stderr  # the replay diverged (request)
    first_call = next(e.seq for e in recorded if e.kind == "llm.call")
    assert f"forked {source} at seq {first_call - 1} into " in done.stdout
    assert ": finished" in done.stdout
    fork = UUID(done.stdout.split(" into ")[1].split(":")[0])
    # The live part asked the model as the shell agent: its prompt and its two tools.
    [live] = fake_llm.requests[before:]
    events = await store.read(fork)
    workspace = events[0].payload["config"]["workspace"]
    assert live["messages"][0] == {
        "role": "system",
        "content": SYSTEM_PROMPT.replace("{workspace}", workspace),
    }
    assert _tool_names(live) == SHELL_TOOLS
    config = events[0].payload["config"]
    assert config["agent"] == "shell-only" and config["agent_config"]["agent"] == "shell-only"
    assert config["tools"] == SHELL_TOOLS
    assert any(
        e.kind == "finish" and e.payload["message"] == "the shell agent's turn" for e in events
    )
    assert (await store.verify(fork)).ok
    # A replay of the fork with no options runs the shell agent again, and matches.
    again = await replay(store, fork)
    assert again.matched, again.divergence
    # Resuming the fork with another agent is refused: its log stays one agent's.
    settings = settings_for(fake_llm, tmp_path)
    with pytest.raises(SessionError, match="recorded with the agent 'shell-only'"):
        await run_session(
            store, settings, SessionOptions(agent="codeact"), task="go on", session_id=fork
        )


async def test_run_and_fork_take_an_agent(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    workspace = tmp_path / "shell-ws"
    workspace.mkdir()
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo hi > out.txt")]),
        Reply(tool_calls=[tool_call("finish", message="written")]),
    )
    before = len(fake_llm.requests)
    session = uuid.uuid4()
    done = chronicle(
        "run", "write a file", "--workspace", str(workspace), "--agent", "shell-only",
        "--session", str(session), env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (workspace / "out.txt").read_text() == "hi\n"
    requests = fake_llm.requests[before:]
    assert len(requests) == 2
    assert all(_tool_names(r) == SHELL_TOOLS for r in requests)
    assert requests[0]["messages"][0]["content"].startswith("You are Chronicle's shell agent")
    events = await store.read(session)
    config = events[0].payload["config"]
    assert (config["agent"], config["tools"]) == ("shell-only", SHELL_TOOLS)
    # Its replay, with no options, runs the agent it recorded.
    result = await replay(store, session)
    assert result.matched, result.divergence
    # ... and `--agent codeact` is a change that wins over the recorded agent: it diverges.
    codeact = await replay(store, session, AgentConfig(agent="codeact"))
    assert codeact.divergence is not None and codeact.divergence.kind == "request"

    # A CodeAct session forked with --agent continues as the shell agent.
    source, recorded = await _record_codeact(store, fake_llm, tmp_path, "source")
    output = next(e for e in recorded if e.kind == "run.output")
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="forked as shell")]))
    before = len(fake_llm.requests)
    forked = tmp_path / "forked"
    done = chronicle(
        "fork", str(source), "--at", str(output.seq), "--workspace", str(forked),
        "--agent", "shell-only", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [live] = fake_llm.requests[before:]
    assert _tool_names(live) == SHELL_TOOLS

    unknown = chronicle("run", "x", "--workspace", str(workspace), "--agent", "nope", env=env)
    assert unknown.returncode == 2
    assert "there is no agent 'nope'" in unknown.stderr and "shell-only" in unknown.stderr
