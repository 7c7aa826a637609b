"""Bad input gets a clear answer and leaves the sandbox working."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import httpx
import pytest

from app.events import ErrorObservation, FileRead, McpCall, Run, RunOutput
from app.runtime import LocalRuntime, SandboxAuthError, SandboxClient, SandboxUnavailableError

REQUIRE_JAIL = os.environ.get("CI") == "true"


async def still_works(runtime: LocalRuntime) -> None:
    result = await runtime.execute(Run(command="echo still here"))
    assert isinstance(result, RunOutput) and result.output == "still here\n"


async def raw_execute(runtime: LocalRuntime, body: bytes) -> httpx.Response:
    assert runtime.client is not None
    async with httpx.AsyncClient() as http:
        return await http.post(
            f"{runtime.client.base_url}/execute",
            content=body,
            headers={"Authorization": f"Bearer {runtime.client.token}"},
        )


async def test_unknown_action_kind(runtime: LocalRuntime) -> None:
    observation = await runtime.execute(McpCall(server="s", tool="t"))
    assert (
        isinstance(observation, ErrorObservation) and "cannot run 'mcp.call'" in observation.message
    )
    response = await raw_execute(runtime, b'{"kind": "teleport"}')
    assert response.json()["kind"] == "error" and "teleport" in response.json()["message"]
    await still_works(runtime)


async def test_missing_fields_and_bad_json(runtime: LocalRuntime) -> None:
    missing = (await raw_execute(runtime, b'{"kind": "run"}')).json()
    assert missing["kind"] == "error" and "'command'" in missing["message"]
    wrong_type = (await raw_execute(runtime, b'{"kind": "file.read", "path": 5}')).json()
    assert wrong_type["kind"] == "error" and "'path'" in wrong_type["message"]
    not_json = (await raw_execute(runtime, b"{nope")).json()
    assert not_json["kind"] == "error" and "not JSON" in not_json["message"]
    await still_works(runtime)


async def test_oversized_request_is_refused(runtime: LocalRuntime) -> None:
    response = await raw_execute(
        runtime, b'{"kind": "run", "command": "' + b"x" * (17 * 1024 * 1024) + b'"}'
    )
    assert response.status_code == 413 and "limit" in response.json()["error"]
    await still_works(runtime)


async def test_wrong_token_is_refused(runtime: LocalRuntime) -> None:
    assert runtime.client is not None
    intruder = SandboxClient(runtime.client.base_url, "not-the-token")
    try:
        with pytest.raises(SandboxAuthError):
            await intruder.execute(Run(command="id"))
        assert await intruder.alive()  # /alive needs no token
    finally:
        await intruder.close()
    await still_works(runtime)


async def test_deleted_workspace(runtime: LocalRuntime, workspace: Path) -> None:
    shutil.rmtree(workspace)
    observation = await runtime.execute(FileRead(path="anything.txt"))
    assert isinstance(observation, ErrorObservation) and "does not exist" in observation.message
    result = await runtime.execute(Run(command="echo survived"))
    assert isinstance(result, RunOutput) and "survived" in result.output


async def test_dead_sandbox_is_reported_not_hung(runtime: LocalRuntime) -> None:
    assert runtime.process is not None
    os.killpg(runtime.process.pid, signal.SIGKILL)
    await runtime.process.wait()
    with pytest.raises(SandboxUnavailableError, match="unreachable"):
        await runtime.execute(Run(command="echo hello?"))


async def test_jail_has_read_only_root_and_no_network(runtime: LocalRuntime) -> None:
    if shutil.which("bwrap") is None:
        assert not REQUIRE_JAIL, "CI must install bubblewrap"
        pytest.skip("bubblewrap is not installed")
    assert runtime.client is not None
    probe = f"curl -s -m 2 {runtime.client.base_url}/alive || echo offline"
    result = await runtime.execute(
        Run(command=f"touch /usr/x; echo > inside.txt && echo wrote; {probe}")
    )
    assert isinstance(result, RunOutput)
    assert "Read-only file system" in result.output
    assert "wrote" in result.output and "offline" in result.output


async def test_unconfined_when_asked(workspace: Path) -> None:
    runtime = LocalRuntime(workspace, jail="none")
    await runtime.start()
    try:
        await runtime.wait_ready(10)
        result = await runtime.execute(Run(command="echo free"))
        assert isinstance(result, RunOutput) and result.output == "free\n"
    finally:
        await runtime.close()
