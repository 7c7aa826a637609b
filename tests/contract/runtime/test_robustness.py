"""Bad input gets a clear answer and leaves the sandbox working."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path

import httpx
import pytest

from app.events import ErrorObservation, FileRead, McpCall, Run, RunOutput
from app.runtime import (
    LocalRuntime,
    Runtime,
    SandboxAuthError,
    SandboxClient,
    SandboxUnavailableError,
)
from app.runtime.docker.runtime import DockerRuntime
from tests.support.ci import IN_CI
from tests.support.sandboxes import client_of, still_works


async def raw_execute(runtime: Runtime, body: bytes) -> httpx.Response:
    return await client_of(runtime).request("POST", "/execute", content=body)


async def test_unknown_action_kind(runtime: Runtime) -> None:
    observation = await runtime.execute(McpCall(server="s", tool="t"))
    assert isinstance(observation, ErrorObservation)
    assert "cannot run 'mcp.call'" in observation.message
    response = await raw_execute(runtime, b'{"kind": "teleport"}')
    assert response.json()["kind"] == "error" and "teleport" in response.json()["message"]
    await still_works(runtime)


async def test_missing_fields_and_bad_json(runtime: Runtime) -> None:
    missing = (await raw_execute(runtime, b'{"kind": "run"}')).json()
    assert missing["kind"] == "error" and "'command'" in missing["message"]
    wrong_type = (await raw_execute(runtime, b'{"kind": "file.read", "path": 5}')).json()
    assert wrong_type["kind"] == "error" and "'path'" in wrong_type["message"]
    not_json = (await raw_execute(runtime, b"{nope")).json()
    assert not_json["kind"] == "error" and "not JSON" in not_json["message"]
    await still_works(runtime)


async def test_oversized_request_is_refused(runtime: Runtime) -> None:
    huge = b'{"kind": "run", "command": "' + b"x" * (17 * 1024 * 1024) + b'"}'
    response = await raw_execute(runtime, huge)
    assert response.status_code == 413 and "limit" in response.json()["error"]
    await still_works(runtime)


async def test_wrong_token_is_refused(runtime: Runtime) -> None:
    client = client_of(runtime)
    intruder = SandboxClient(client.base_url, "not-the-token", unix_socket=client.unix_socket)
    try:
        with pytest.raises(SandboxAuthError):
            await intruder.execute(Run(command="id"))
        assert await intruder.alive()  # /alive needs no token
    finally:
        await intruder.close()
    await still_works(runtime)


async def test_deleted_workspace(runtime: Runtime, workspace: Path) -> None:
    shutil.rmtree(workspace)
    observation = await runtime.execute(FileRead(path="anything.txt"))
    assert isinstance(observation, ErrorObservation)
    assert "does not exist" in observation.message or "exist" in observation.message
    result = await runtime.execute(Run(command="echo survived"))
    assert isinstance(result, RunOutput) and "survived" in result.output


async def test_dead_sandbox_is_reported_not_hung(runtime: Runtime) -> None:
    if isinstance(runtime, DockerRuntime):
        assert runtime.container is not None
        await asyncio.to_thread(runtime.container.kill)
    else:
        assert isinstance(runtime, LocalRuntime) and runtime.process is not None
        os.killpg(runtime.process.pid, signal.SIGKILL)
        await runtime.process.wait()
    with pytest.raises(SandboxUnavailableError, match="unreachable"):
        await runtime.execute(Run(command="echo hello?"))


async def test_commands_have_no_network_by_default(runtime: Runtime) -> None:
    if isinstance(runtime, LocalRuntime) and shutil.which("bwrap") is None:
        assert not IN_CI, "CI must install bubblewrap"
        pytest.skip("bubblewrap is not installed")
    interfaces = "[i for i in socket.if_nameindex() if i[1] != 'lo']"
    probe = f'python3 -c "import socket; print(len({interfaces}))"'  # only loopback is left
    result = await runtime.execute(Run(command=probe, timeout=30))
    assert isinstance(result, RunOutput)
    assert result.output.strip().endswith("0"), result.output  # no interface but loopback
