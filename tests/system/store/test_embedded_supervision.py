"""`chronicle serve` and `chronicle worker` on the embedded PostgreSQL start it again when its
postmaster is killed: exactly one of them starts it (the other finds it running), the API
turns ready again and a new session runs to its end, with nothing started by hand. A server
stopped on purpose (`chronicle db stop`) is left stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from app.store.embedded import EmbeddedPostgres
from app.store.embedded.postmaster import read_postmaster
from tests.support.agent_cli import agent_environment
from tests.support.chronicle_server import ServerProcess, start_server
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.forked import chronicle_popen
from tests.support.waiting import exited, pid_ended, until

#: What the process that started the server again logs (once per restart, at WARNING).
STARTED_AGAIN = "started it again"
#: What each of them logs when the server was stopped on purpose.
LEFT_STOPPED = "left stopped until a command starts it"
#: What PostgreSQL logs each time a postmaster comes up on the data directory.
UP = "database system is ready to accept connections"


async def _ready(client: httpx.AsyncClient) -> bool:
    try:
        return (await client.get("/health/ready")).status_code == 200
    except httpx.HTTPError:
        return False


async def _finished(client: httpx.AsyncClient, session: str) -> bool:
    answer = await client.get(f"/api/sessions/{session}")
    return answer.status_code == 200 and answer.json()["state"] == "finished"


def _postmasters(pgdata: Path) -> list[int]:
    """The live postmasters of ``pgdata`` (backends rewrite their command line; only the
    postmaster keeps ``-D <pgdata>`` in it)."""
    found = []
    for process in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        if process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if "postgres" in (process.info["name"] or "") and str(pgdata) in (
            process.info["cmdline"] or []
        ):
            found.append(process.info["pid"])
    return found


@pytest.mark.slow
async def test_serve_and_worker_start_a_killed_embedded_postgres_once_and_carry_on(
    fake_llm: FakeLlmServer, tmp_path: Path, data_dir: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo ran > log.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    env = agent_environment(fake_llm, None, tmp_path, CHRONICLE_DATA_DIR=str(data_dir))
    embedded = EmbeddedPostgres(data_dir)
    server: ServerProcess | None = None
    worker_log = tmp_path / "worker.log"
    worker: subprocess.Popen[str] | None = None
    client = httpx.AsyncClient(timeout=60)
    try:
        server = await asyncio.to_thread(start_server, env, timeout=180)  # sets it up
        with worker_log.open("w") as log:
            worker = chronicle_popen(
                ["worker"],
                env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        await until(
            lambda: "running" in worker_log.read_text(),
            timeout=120,
            what="the worker started",
            process=worker,
        )
        token = await asyncio.to_thread(server.token, "ops")
        client.base_url = httpx.URL(server.url)
        client.headers["Authorization"] = f"Bearer {token}"
        await until(lambda: _ready(client), timeout=120, what="the API ready")

        killed = read_postmaster(embedded.pgdata)
        assert killed is not None
        os.kill(killed.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        await pid_ended(killed.pid, timeout=30, what="the killed postmaster")

        await until(
            lambda: _ready(client),
            timeout=90,
            what="the API ready again after the postmaster was killed",
            process=server.process,
        )
        print(f"ready again {time.monotonic() - killed_at:.1f} s after the kill")

        created = await client.post(
            "/api/sessions", json={"task": "Log a line.", "limits": {"max_iterations": 10}}
        )
        assert created.status_code == 201, created.text
        session, workspace = created.json()["id"], Path(created.json()["workspace"])
        await until(
            lambda: _finished(client, session),
            timeout=120,
            what="the new session finished",
        )
        assert (workspace / "log.txt").read_text() == "ran\n"

        restarted = read_postmaster(embedded.pgdata)
        assert restarted is not None and restarted.pid != killed.pid
        assert _postmasters(embedded.pgdata) == [restarted.pid]
        # One of the two started it; the other waited and found it running.
        outputs = "".join(server.output) + worker_log.read_text()
        restarts = [line for line in outputs.splitlines() if STARTED_AGAIN in line]
        assert len(restarts) == 1, outputs
        [restart] = restarts
        assert restart.startswith("WARNING"), restart
        assert f"pid {killed.pid}" in restart and f"pid {restarted.pid}" in restart, restart
        postgres_log = (embedded.pgdata / "log").read_text(errors="replace")
        assert postgres_log.count(UP) == 2, postgres_log  # set up, then once again
        # A second starter would have met the new one's lock file (a start refused while
        # the killed one is not yet reaped names the killed one) and said it did not start.
        assert f"another postmaster (PID {restarted.pid})" not in postgres_log, postgres_log
        assert "did not start" not in outputs, outputs

        # Stopped on purpose (`chronicle db stop`): both see it, neither starts it again.
        assert await asyncio.to_thread(embedded.stop)
        await until(
            lambda: ("".join(server.output) + worker_log.read_text()).count(LEFT_STOPPED) == 2,
            timeout=30,
            what="serve and worker saw the server stopped",
        )
        assert read_postmaster(embedded.pgdata) is None and not _postmasters(embedded.pgdata)
        await asyncio.to_thread(embedded.ensure_running)  # what the next command does

        assert await asyncio.to_thread(server.stop) == 0
        worker.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            assert await exited(worker) == 0, worker_log.read_text()
    finally:
        await client.aclose()
        for process in (server.process if server else None, worker):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(10)
