"""`chronicle serve --role worker` and `--role all` run the sessions requested of them (no
API call needed: ``request_run`` through the store, as the API does) and exit 0 on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

from app.sessions.leases import request_run
from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.chronicle_server import start_server
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.forked import chronicle_popen
from tests.support.waiting import exited, wait_for_event
from tests.support.worker_sessions import recorded_session


def script(fake: FakeLlmServer) -> None:
    fake.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo ran >> log.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )


async def run_to_the_end(store: EventStore, fake: FakeLlmServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = await recorded_session(store, fake, workspace, "Log a line.")
    await request_run(store, session, reason="created")
    await wait_for_event(
        store,
        session,
        lambda e: e.kind == "agent.state" and e.payload["state"] == "finished",
        timeout=90,
    )
    assert (workspace / "log.txt").read_text() == "ran\n"


async def test_serve_role_worker_runs_requested_sessions(
    store: EventStore, fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    script(fake_llm)
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    log = (tmp_path / "serve.log").open("w")
    serve = chronicle_popen(
        ["serve", "--role", "worker"],
        env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    log.close()
    try:
        await run_to_the_end(store, fake_llm, tmp_path)
        serve.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            assert await exited(serve) == 0
    except (AssertionError, TimeoutError):
        print((tmp_path / "serve.log").read_text())
        raise
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(10)


async def test_serve_role_all_runs_requested_sessions(
    store: EventStore, fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    script(fake_llm)
    server = await asyncio.to_thread(
        start_server, agent_environment(fake_llm, app_database_url, tmp_path)
    )
    try:
        await run_to_the_end(store, fake_llm, tmp_path)
        assert await asyncio.to_thread(server.stop) == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(10)
