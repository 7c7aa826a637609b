"""The warm pool, the reaper, and sandboxes that must not outlive their owner."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import docker
import pytest

from app.events import Run, RunOutput
from app.runtime import LocalRuntime
from app.runtime.docker.reaper import list_sandboxes, reap, reap_forever
from app.runtime.docker.runtime import DockerRuntime, container_name
from app.runtime.pool import SandboxPool
from tests.support.sandboxes import sandbox_settings
from tests.support.waiting import exited, pid_ended, until


async def test_pool_hands_out_ready_sandboxes_at_once(tmp_path: Path) -> None:
    counter = iter(range(100))
    pool = SandboxPool(lambda: LocalRuntime(tmp_path / f"ws{next(counter)}"), size=2)
    await pool.start()
    try:
        assert pool.available == 2
        started = time.monotonic()
        runtime = await pool.acquire()
        assert time.monotonic() - started < 0.1
        result = await runtime.execute(Run(command="echo warm"))
        assert isinstance(result, RunOutput) and result.output == "warm\n"
        await runtime.close()
        # Refilled in the background; the pool tells no one, its count is looked at.
        await until(lambda: pool.available >= 2, timeout=20, what="the pool refilled")
        cold = [await pool.acquire() for _ in range(3)]  # more than it holds: started on demand
        assert len(cold) == 3
        for runtime in cold:
            await runtime.close()
    finally:
        await pool.close()


@pytest.mark.usefixtures("docker_ready")
async def test_reaper_removes_silent_sandboxes_and_keeps_live_ones(tmp_path: Path) -> None:
    engine = docker.from_env()
    config = sandbox_settings(tmp_path).runtime_config().docker
    quiet = DockerRuntime(tmp_path / "quiet", uuid.uuid4(), config=config)
    busy = DockerRuntime(tmp_path / "busy", uuid.uuid4(), config=config)
    for runtime in (quiet, busy):
        await runtime.start()
        await runtime.wait_ready(60)
    try:
        names = {info.name for info in await list_sandboxes(engine)}
        assert {container_name(quiet.session_id), container_name(busy.session_id)} <= names
        await asyncio.sleep(2.5)  # the silence the reaper measures (2 s): the time is the test
        await busy.heartbeat()
        mine = {quiet.session_id, busy.session_id}  # never touch other runs' sandboxes
        removed = {info.name for info in await reap(2.0, engine, sessions=mine)}
        assert container_name(quiet.session_id) in removed
        assert container_name(busy.session_id) not in removed
        remaining = {info.name for info in await list_sandboxes(engine)}
        assert container_name(quiet.session_id) not in remaining
        result = await busy.execute(Run(command="echo kept"))
        assert isinstance(result, RunOutput) and result.output == "kept\n"
    finally:
        await quiet.close()
        await busy.close()


@pytest.mark.usefixtures("docker_ready")
def test_reaper_removes_sandboxes_of_a_crashed_process(tmp_path: Path) -> None:
    session = uuid.uuid4()
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys, uuid\n"
            "from app.runtime.docker.runtime import DockerRuntime\n"
            "from tests.support.sandboxes import sandbox_settings\n"
            "from pathlib import Path\n"
            "async def main():\n"
            f"    rt = DockerRuntime(Path({str(tmp_path)!r}) / 'ws', {str(session)!r},"
            f" config=sandbox_settings(Path({str(tmp_path)!r})).runtime_config().docker)\n"
            "    await rt.start(); await rt.wait_ready(60); print('up', flush=True)\n"
            "    await asyncio.sleep(3600)\n"
            "asyncio.run(main())\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "up"
        owner.send_signal(signal.SIGKILL)  # the owner crashes, its container stays behind
        owner.wait(10)
        engine = docker.from_env()
        assert engine.containers.get(container_name(session)).status == "running"
        time.sleep(1.5)  # the silence the reaper measures (1 s): the time is the test
        removed = {info.name for info in asyncio.run(reap(1.0, engine, sessions={str(session)}))}
        assert container_name(session) in removed
    finally:
        owner.kill()
        try:
            docker.from_env().containers.get(container_name(session)).remove(force=True)
        except docker.errors.NotFound:
            pass


async def test_local_sandbox_dies_with_its_owner(tmp_path: Path) -> None:
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio\n"
            "from app.runtime import LocalRuntime\n"
            "async def main():\n"
            f"    rt = LocalRuntime({str(tmp_path / 'ws')!r})\n"
            "    await rt.start(); await rt.wait_ready(10)\n"
            "    print(rt.process.pid, flush=True)\n"
            "    await asyncio.sleep(3600)\n"
            "asyncio.run(main())\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    sandbox_pid = int(owner.stdout.readline())
    os.kill(owner.pid, signal.SIGKILL)
    await exited(owner)
    await pid_ended(sandbox_pid, timeout=10, what="the sandbox (its owner was killed)")


@pytest.mark.usefixtures("docker_ready")
async def test_periodic_reaper_in_the_service(tmp_path: Path) -> None:
    quiet = DockerRuntime(
        tmp_path / "ws", uuid.uuid4(), config=sandbox_settings(tmp_path).runtime_config().docker
    )
    await quiet.start()
    await quiet.wait_ready(60)
    reaper = asyncio.create_task(reap_forever(1.0, 0.5, sessions={quiet.session_id}))
    try:
        engine = docker.from_env()
        name = container_name(quiet.session_id)
        # The low-level list: containers.list() inspects each container it found, which
        # raced the reaper removing this one (NotFound).
        await until(
            lambda: not engine.api.containers(all=True, filters={"name": name}),
            timeout=20,
            what="the reaper removing the silent sandbox",
            interval=0.25,
        )
    finally:
        reaper.cancel()
        await quiet.close()


async def test_pool_and_runtime_from_settings(tmp_path: Path) -> None:
    from app.config import Settings
    from app.runtime.factory import make_pool, make_runtime

    config = Settings(data_dir=tmp_path / "data", sandbox_pool_size=1).runtime_config()
    assert isinstance(make_runtime(config, tmp_path / "ws", uuid.uuid4()), LocalRuntime)
    with pytest.raises(ValueError, match="unknown runtime"):
        make_runtime(config, tmp_path / "ws", uuid.uuid4(), kind="vm")
    pool = make_pool(config)
    await pool.start()
    try:
        assert pool.available == 1
        runtime = await pool.acquire()
        result = await runtime.execute(Run(command="pwd"))
        assert isinstance(result, RunOutput)
        assert result.output.startswith(str(tmp_path / "data" / "workspaces"))
        await runtime.close()
    finally:
        await pool.close()
