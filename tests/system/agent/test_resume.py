"""Kill `chronicle run` mid-session; `chronicle resume` continues from the log alone."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import uuid
from pathlib import Path

from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.forked import chronicle_popen, chronicle_run
from tests.support.waiting import until

# &&, not ;: when the process tree is killed, `sleep` may die before bash does.
SLOW = "echo started >> log.txt && sleep 30 && echo slow >> log.txt"


def cli_env(fake: FakeLlmServer, database_url: str, tmp_path: Path) -> dict[str, str]:
    return agent_environment(fake, database_url, tmp_path)


def listed_state(session: uuid.UUID, env: dict[str, str]) -> str | None:
    """The state `chronicle sessions --json` shows for ``session``."""
    rows = [
        json.loads(line) for line in chronicle("sessions", "--json", env=env).stdout.splitlines()
    ]
    return next(row["state"] for row in rows if row["id"] == str(session))


async def test_kill_mid_session_and_resume(
    store: EventStore, fake_llm: FakeLlmServer, database_url: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo first >> log.txt")]),
        Reply(tool_calls=[tool_call("execute_bash", command=SLOW, timeout=60)]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo after >> log.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    env = cli_env(fake_llm, database_url, tmp_path)
    session = uuid.uuid4()
    run = chronicle_popen(
        ["run", "--workspace", str(workspace),
         "--session", str(session), "Log three lines."],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        log_file = workspace / "log.txt"
        await until(
            lambda: log_file.exists() and "started" in log_file.read_text(),
            timeout=60,
            what="the slow command running",
            process=run,
        )
        assert await asyncio.to_thread(listed_state, session, env) == "running"
        second = await asyncio.to_thread(chronicle, "resume", str(session), env=env)
        assert second.returncode == 1 and "is running in another process" in second.stderr
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(10)
    assert (workspace / "log.txt").read_text() == "first\nstarted\n"
    # Its process is gone: never "running" again (was: "running" forever).
    assert await asyncio.to_thread(listed_state, session, env) == "interrupted"

    resumed = await asyncio.to_thread(
        chronicle_run,
        ["resume", str(session)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "finished" in resumed.stdout
    # The interrupted command was not run again; the session went on to the end.
    assert (workspace / "log.txt").read_text() == "first\nstarted\nafter\n"
    events = await store.read(session)
    interrupted = [
        e for e in events if e.kind == "error" and e.payload.get("error_type") == "interrupted"
    ]
    assert len(interrupted) == 1
    assert sum(1 for e in events if e.kind == "llm.call") == 4
    assert "interrupted" in json.dumps(fake_llm.requests[2]["messages"])
    assert events[-2].payload["state"] == "finished"
    assert (await store.verify(session)).ok


async def test_run_command_prints_events_and_exit_codes(
    fake_llm: FakeLlmServer, database_url: str, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo hi")]),
        Reply(tool_calls=[tool_call("finish", message="said hi")]),
    )
    env = cli_env(fake_llm, database_url, tmp_path)
    done = await asyncio.to_thread(
        chronicle_run,
        ["run", "--workspace", str(tmp_path / "ws"), "--create-workspace", "Say hi."],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "$ echo hi" in done.stdout and "[exit 0] hi" in done.stdout
    assert "finished" in done.stdout
    unconfigured = {k: v for k, v in env.items() if k != "CHRONICLE_LLM_MODEL"}
    failed = await asyncio.to_thread(
        chronicle_run,
        ["run", "--workspace", str(tmp_path / "ws"), "Say hi."],
        env=unconfigured, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert failed.returncode == 1
    assert "no model is configured" in failed.stderr and "CHRONICLE_LLM_MODEL" in failed.stderr
    assert "Traceback" not in failed.stderr
