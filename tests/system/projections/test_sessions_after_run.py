"""`chronicle sessions` right after `chronicle run` lists the run as it ended, with no server:
with the inline runner (the default) the run leaves the projection current; without it
(``projections_inline`` off, no `chronicle projections run`) the reader catches it up."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

POSITION_SQL = "SELECT global_position FROM projections WHERE name = 'session_state'"


@pytest.mark.parametrize("inline", ["true", "false"])
async def test_sessions_right_after_run_shows_the_run_as_it_ended(
    inline: str,
    fake_llm: FakeLlmServer,
    app_database_url: str,
    superuser: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo hi")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    env = agent_environment(
        fake_llm, app_database_url, tmp_path, CHRONICLE_PROJECTIONS_INLINE=inline
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = chronicle("run", "--workspace", str(workspace), "Say hi.", env=env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    head = await superuser.fetchval("SELECT max(global_position) FROM events")
    applied = await superuser.fetchval(POSITION_SQL)
    if inline == "true":
        assert applied == head  # the run's own runner applied everything before it exited
    else:
        assert applied is None  # nothing ran the projection: the reader must catch it up

    listed = chronicle("sessions", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    events = chronicle("events", row["id"], "--json", env=env).stdout.splitlines()
    assert row["state"] == "finished" and row["events"] == len(events)
    assert row["model_calls"] == 2 and row["steps"] == 2  # the command and the finish
    assert row["model"] == "openai/fake-model" and row["title"] == "Say hi."
    assert await superuser.fetchval(POSITION_SQL) == head
    only = chronicle("sessions", "--state", "finished", "--model", "openai/fake-model", env=env)
    assert row["id"] in only.stdout
    none = chronicle("sessions", "--state", "error", env=env)
    assert none.stdout == "" and "no sessions match" in none.stderr


async def test_a_run_stopped_at_its_iteration_limit_is_listed_as_limit(
    fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    """The controller's own wording of a stop at the limit is what the fold recognises."""
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo 1")]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo 2")]),
    )
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = chronicle(
        "run", "--workspace", str(workspace), "--max-iterations", "1", "Loop.", env=env,
        timeout=180,
    )  # fmt: skip
    assert done.returncode == 1 and "iteration limit" in done.stdout, done.stdout + done.stderr
    [row] = [
        json.loads(line)
        for line in chronicle("sessions", "--state", "limit", "--json", env=env).stdout.splitlines()
    ]
    assert row["state"] == "limit" and row["reason"].startswith("reached the iteration limit")
    assert chronicle("sessions", "--state", "stopped", env=env).stdout == ""
