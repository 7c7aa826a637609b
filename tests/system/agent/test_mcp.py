"""MCP tools in a session: a real MCP server package over stdio, and servers that fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from app.tools.config import McpServerConfig
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

GIT_SERVER = str(Path(sys.executable).with_name("mcp-server-git"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    setup = [
        ["git", "init", "-q", "-b", "main"],
        ["git", "config", "user.email", "t@example.org"],
        ["git", "config", "user.name", "Test"],
    ]
    for command in setup:
        subprocess.run(command, cwd=path, check=True)
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "first commit"], cwd=path, check=True)
    return path


async def test_mcp_tool_call_through_mcp_server_git(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, repo: Path
) -> None:
    assert shutil.which(GIT_SERVER), "mcp-server-git is a dev dependency"
    fake_llm.script(
        Reply(tool_calls=[tool_call("git__git_log", repo_path=str(repo), max_count=5)]),
        Reply(tool_calls=[tool_call("finish", message="read the log")]),
    )
    # Run as root, the sandbox takes the workspace for its unprivileged uid; git on the host
    # then refuses a repository of another owner unless told it is safe.
    trusted = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
               "GIT_CONFIG_VALUE_0": "*"}  # fmt: skip
    server = McpServerConfig(
        name="git", command=GIT_SERVER, args=["--repository", str(repo)], env=trusted
    )
    session, outcome = await run_session(
        store, settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=repo, mcp_servers=[server]), task="What was the last commit?",
    )  # fmt: skip
    assert outcome == "finished"
    events = await store.read(session)
    assert "git__git_log" in events[0].payload["config"]["tools"]
    offered = [t["function"]["name"] for t in fake_llm.requests[0]["tools"]]
    assert "git__git_status" in offered and "git__git_log" in offered
    call = next(e for e in events if e.kind == "mcp.call")
    assert (call.payload["server"], call.payload["tool"]) == ("git", "git_log")
    result = next(e for e in events if e.kind == "mcp.result")
    assert result.cause == call.seq and not result.payload["is_error"]
    assert "first commit" in json.dumps(result.payload["content"])
    assert "first commit" in json.dumps(fake_llm.requests[1]["messages"])


async def test_failing_and_hanging_servers_give_errors_not_a_hang(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo still working")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    broken = McpServerConfig(name="broken", command="/nonexistent/mcp-server")
    hanging = McpServerConfig(name="hanging", command="sleep", args=["1000"], start_timeout=1.5)
    session, outcome = await run_session(
        store, settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws", mcp_servers=[broken, hanging]), task="Work.",
    )  # fmt: skip
    assert outcome == "finished"
    problems = [e.payload["message"] for e in await store.read(session) if e.kind == "error"]
    assert any("'broken' failed to start" in p for p in problems)
    assert any("'hanging' failed to start" in p and "1.5 s" in p for p in problems)


async def test_tool_of_a_dead_server_answers_with_an_error(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("broken__anything", x=1)]),
        Reply(tool_calls=[tool_call("finish", message="gave up")]),
    )
    broken = McpServerConfig(name="broken", command="/nonexistent/mcp-server")
    session, outcome = await run_session(
        store, settings_for(fake_llm, tmp_path),
        SessionOptions(workspace=tmp_path / "ws", mcp_servers=[broken]), task="Use the tool.",
    )  # fmt: skip
    assert outcome == "finished"
    errors = [e.payload["message"] for e in await store.read(session) if e.kind == "error"]
    assert any("no tool 'broken__anything'" in message for message in errors)
