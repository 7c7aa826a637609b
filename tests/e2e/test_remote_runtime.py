"""RemoteRuntime: the same client against a sandbox server that runs somewhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.events import FileRead, FileReadOutput, Run, RunOutput
from app.runtime import LocalRuntime, RemoteRuntime, SandboxAuthError, SandboxStartError


async def test_remote_runtime_drives_a_running_server(tmp_path: Path) -> None:
    server = LocalRuntime(tmp_path / "ws")  # stands in for a sandbox service elsewhere
    await server.start()
    try:
        assert server.client is not None
        remote = RemoteRuntime(server.client.base_url, server.client.token)
        await remote.start()
        await remote.wait_ready(10)
        try:
            result = await remote.execute(Run(command="echo remote > r.txt; cat r.txt"))
            assert isinstance(result, RunOutput) and result.output == "remote\n"
            read = await remote.execute(FileRead(path="r.txt"))
            assert isinstance(read, FileReadOutput) and read.content == "     1\tremote"
            await remote.upload("up.txt", b"sent")
            assert await remote.download("up.txt") == b"sent"
            await remote.heartbeat()
        finally:
            await remote.close()
        impostor = RemoteRuntime(server.client.base_url, "wrong")
        with pytest.raises(SandboxAuthError):
            await impostor.execute(Run(command="true"))
        await impostor.close()
    finally:
        await server.close()


async def test_remote_runtime_that_never_answers(tmp_path: Path) -> None:
    remote = RemoteRuntime("http://127.0.0.1:9", "token")
    with pytest.raises(SandboxStartError, match="not ready"):
        await remote.wait_ready(0.5)
    await remote.close()
