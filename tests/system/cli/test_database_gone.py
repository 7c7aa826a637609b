"""The embedded PostgreSQL dies: the next command starts it again; a run whose database goes
away says so in one line, without a traceback, and the session resumes once it is back."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path

import psutil
import pytest

from app.config import Settings
from app.store.embedded import EmbeddedPostgres
from app.store.embedded.postmaster import read_postmaster
from tests.support.agent_cli import agent_environment, file_says, start
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.waiting import until


@pytest.mark.slow
@pytest.mark.parametrize("socket", ["in its data directory", "in a temporary directory"])
def test_a_killed_embedded_postgres_is_started_again_by_the_next_command(
    socket: str, tmp_path: Path, data_dir: Path
) -> None:
    if socket == "in a temporary directory":  # the socket's path would be too long for sun_path
        data_dir = data_dir.parent / ("long-" * 20) / "data"
    env = agent_environment(None, None, tmp_path, CHRONICLE_DATA_DIR=str(data_dir))
    server = EmbeddedPostgres(data_dir)
    try:
        demo = chronicle("demo", env=env, timeout=180)
        assert demo.returncode == 0, demo.stderr
        killed = read_postmaster(server.pgdata)
        assert killed is not None and killed.socket_dir is not None
        os.kill(killed.pid, signal.SIGKILL)
        psutil.wait_procs([psutil.Process(killed.pid)], timeout=30)
        assert not server.status().running

        listed = chronicle("sessions", env=env, timeout=180)
        assert listed.returncode == 0, listed.stderr
        assert "demo: a recorded session" in listed.stdout
        restarted = read_postmaster(server.pgdata)
        assert restarted is not None and restarted.pid != killed.pid
        # the dead server's socket directory, so the URLs of processes still running hold
        assert restarted.socket_dir == killed.socket_dir
    finally:
        server.stop()


@pytest.mark.slow
async def test_a_database_that_goes_away_mid_run_is_one_line_and_the_session_resumes(
    fake_llm: FakeLlmServer, tmp_path: Path, data_dir: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    if os.geteuid() == 0:  # the sandbox's own already: no hand-over warning beside the error
        uid = Settings().sandbox.local.uid
        os.chown(workspace, uid, uid)
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo started > log.txt && sleep 20")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    env = agent_environment(fake_llm, None, tmp_path, CHRONICLE_DATA_DIR=str(data_dir))
    server = EmbeddedPostgres(data_dir)
    session = str(uuid.uuid4())
    run = start("run", "--workspace", str(workspace), "--session", session, "Go.", env=env)
    try:
        await until(
            file_says(workspace / "log.txt", "started"),
            timeout=240,
            what="the command started",
            process=run,
        )
        await asyncio.to_thread(server.stop)
        out, err = await asyncio.to_thread(run.communicate, timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 1, out + err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    [line] = lines
    assert line.startswith("error: the database went away")
    assert line.endswith(f"continue with: chronicle resume {session}")

    resumed = await asyncio.to_thread(chronicle, "resume", session, env=env, timeout=240)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"session {session}: finished" in resumed.stdout
    verified = await asyncio.to_thread(chronicle, "verify", session, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
