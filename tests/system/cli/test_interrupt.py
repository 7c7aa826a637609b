"""SIGINT and SIGTERM to a real `chronicle run`: the stop is in the log, the sandbox is gone,
the user is told how to resume, and the exit code says which signal it was.

Before: SIGTERM killed the process where it stood (no agent.state, a Docker container left
running until the reaper's two hours), and SIGINT left the session "running" in the log with
no hint; neither recorded a model call in flight.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from app.store import EventStore
from tests.support.agent_cli import agent_environment, file_says, process_with_argument, start
from tests.support.cli import chronicle
from tests.support.docker_engine import session_containers
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.waiting import before_exit, until


async def finish(process: subprocess.Popen[str], timeout: float = 90) -> tuple[str, str]:
    try:
        return await asyncio.to_thread(process.communicate, timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["local", "docker"])
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_signal_mid_command_stops_the_session_in_the_log(
    runtime: str,
    stop: signal.Signals,
    request: pytest.FixtureRequest,
    store: EventStore,
    fake_llm: FakeLlmServer,
    app_database_url: str,
    tmp_path: Path,
) -> None:
    if runtime == "docker":
        request.getfixturevalue("docker_ready")
    marker = f"300.{random.randrange(10**6, 10**7)}"  # `sleep 300.x`: a process we can find
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake_llm.script(
        Reply(
            tool_calls=[
                tool_call("execute_bash", command=f"echo started > log.txt && sleep {marker}")
            ]
        ),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    env = agent_environment(fake_llm, app_database_url, tmp_path, CHRONICLE_RUNTIME=runtime)
    session = uuid.uuid4()
    run = start("run", "--workspace", str(workspace), "--session", str(session), "Wait.", env=env)
    try:
        await until(
            file_says(workspace / "log.txt", "started"),
            timeout=300,
            what="the command started",
            process=run,
        )
        await until(
            lambda: bool(process_with_argument(marker)),
            timeout=60,
            what="the command's process running",
            process=run,
        )
        run.send_signal(stop)
    finally:
        out, err = await finish(run)

    assert run.returncode == 128 + stop, out + err
    assert "Traceback" not in err
    assert f"continue with: chronicle resume {session}" in err
    assert f"stopped (interrupted by {stop.name})" in out
    events = await store.read(session)
    states = [e.payload for e in events if e.kind == "agent.state" and e.source == "agent"]
    assert states[-1] == {"state": "stopped", "reason": f"interrupted by {stop.name}"}
    # The sandbox is gone with everything it ran: no process, no container.
    assert not process_with_argument(marker)
    if runtime == "docker":
        assert session_containers(str(session)) == []
    assert (await store.verify(session)).ok

    if runtime == "local" and stop == signal.SIGINT:
        resumed = await finish(start("resume", str(session), env=env), timeout=120)
        assert "finished" in resumed[0], resumed
        interrupted = [
            e
            for e in await store.read(session)
            if e.kind == "error" and e.payload.get("error_type") == "interrupted"
        ]
        assert len(interrupted) == 1  # the stopped command is reported, never run again


@pytest.mark.slow
async def test_a_signal_during_a_model_call_records_the_call(
    store: EventStore, fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake_llm.script(Reply(content="too late", delay=30))
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    session = uuid.uuid4()
    run = start("run", "--workspace", str(workspace), "--session", str(session), "Hi.", env=env)
    try:
        await before_exit(
            fake_llm.wait_until(lambda fake: fake.in_flight == 1),
            run,
            timeout=60,
            what="the model call in flight",
        )
        run.send_signal(signal.SIGINT)
    finally:
        out, err = await finish(run)
    assert run.returncode == 130, out + err
    events = await store.read(session)
    [call] = [e.payload for e in events if e.kind == "llm.call"]
    assert call["error_kind"] == "interrupted" and "interrupted" in call["error"]
    assert call["latency_ms"] > 0 and call["attempts"] == 1
    assert events[-1].kind == "agent.state"
    assert events[-1].payload == {"state": "stopped", "reason": "interrupted by SIGINT"}
    [listed] = chronicle("sessions", "--json", env=env).stdout.splitlines()
    assert json.loads(listed)["state"] == "stopped"
