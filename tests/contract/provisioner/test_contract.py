"""What every provisioner promises the remote runtime and the reaper
(app/runtime/provisioner.py)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from app.events import Run, RunOutput
from app.runtime.provisioner import HostLostError, Provisioner, reap


async def _ready(provisioner: Provisioner, workspace: Path, session: str):  # type: ignore[no-untyped-def]
    sandbox = await provisioner.acquire(session, workspace)
    await provisioner.wait_ready(sandbox, 60)
    return sandbox


async def test_a_sandbox_is_acquired_labelled_runs_and_is_released(
    provisioner: Provisioner, tmp_path: Path
) -> None:
    session = str(uuid.uuid4())
    workspace = tmp_path / "ws"
    sandbox = await _ready(provisioner, workspace, session)
    hosts = {health.host for health in await provisioner.health()}
    assert sandbox.host in hosts
    result = await sandbox.client.execute(Run(command="echo placed > here.txt && cat here.txt"))
    assert isinstance(result, RunOutput) and result.output == "placed\n"
    assert (workspace / "here.txt").read_text() == "placed\n"  # the session's workspace
    listed = [s for s in await provisioner.list_sandboxes() if s.session_id == session]
    assert [(s.host, s.sandbox_id, s.status) for s in listed] == [
        (sandbox.host, sandbox.sandbox_id, "running")
    ]
    assert listed[0].idle_seconds is not None and listed[0].idle_seconds < 30
    await provisioner.release(sandbox.host, sandbox.sandbox_id)
    assert not [s for s in await provisioner.list_sandboxes() if s.session_id == session]
    await provisioner.release(sandbox.host, sandbox.sandbox_id)  # twice: nothing left to do


async def test_health_names_every_host_with_its_room(provisioner: Provisioner) -> None:
    health = await provisioner.health()
    assert len(health) >= 2
    for host in health:
        assert host.reachable and host.problem is None, host
        assert host.capacity >= 1 and 0 <= host.running


async def test_a_takeover_replaces_the_sessions_sandbox_instead_of_adding_one(
    provisioner: Provisioner, tmp_path: Path
) -> None:
    """A worker that died left its sandbox; the next one's acquire finds it by its label
    and puts the new one in its place, on its host."""
    session = str(uuid.uuid4())
    first = await _ready(provisioner, tmp_path / "ws", session)
    second = await _ready(provisioner, tmp_path / "ws", session)  # nobody released the first
    assert second.host == first.host
    mine = [s for s in await provisioner.list_sandboxes() if s.session_id == session]
    assert [(s.host, s.sandbox_id) for s in mine] == [(second.host, second.sandbox_id)]
    result = await second.client.execute(Run(command="echo again"))
    assert isinstance(result, RunOutput) and result.output == "again\n"
    await provisioner.release(second.host, second.sandbox_id)


async def test_a_restart_pinned_to_a_host_stays_there_or_says_it_is_lost(
    provisioner: Provisioner, tmp_path: Path
) -> None:
    hosts = [health.host for health in await provisioner.health()]
    session = str(uuid.uuid4())
    for host in hosts:
        sandbox = await provisioner.acquire(session, tmp_path / "ws", host=host)
        assert sandbox.host == host
        await provisioner.wait_ready(sandbox, 60)
        await provisioner.release(sandbox.host, sandbox.sandbox_id)
    with pytest.raises(HostLostError, match=r"unix:///nowhere\.sock is unreachable"):
        await provisioner.acquire(session, tmp_path / "ws", host="unix:///nowhere.sock")


async def test_the_reaper_releases_quiet_sandboxes_on_every_host(
    provisioner: Provisioner, tmp_path: Path
) -> None:
    hosts = [health.host for health in await provisioner.health()]
    quiet = {str(uuid.uuid4()): host for host in hosts}  # one quiet sandbox on each host
    busy = str(uuid.uuid4())
    for session, host in quiet.items():
        await provisioner.wait_ready(
            await provisioner.acquire(session, tmp_path / session, host=host), 60
        )
    kept = await _ready(provisioner, tmp_path / "busy", busy)
    await asyncio.sleep(2.5)  # the silence the reaper measures (2 s): the time is the test
    await kept.client.heartbeat()
    removed = await reap(provisioner, 2.0, sessions={*quiet, busy})
    assert sorted((s.session_id, s.host) for s in removed) == sorted(quiet.items())
    left = {s.session_id for s in await provisioner.list_sandboxes()}
    assert busy in left and not left & set(quiet)
    await provisioner.release(kept.host, kept.sandbox_id)
