"""RemoteRuntime: the same client against a sandbox server that runs somewhere else."""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.events import FileRead, FileReadOutput, Run, RunOutput
from app.runtime import RemoteRuntime, SandboxAuthError, SandboxStartError
from app.runtime.image import RUNTIME_IMAGE_DIR


@pytest.fixture
def tcp_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The action server on a loopback port: stands in for a sandbox service elsewhere."""
    token = secrets.token_urlsafe(16)
    (tmp_path / "token").write_text(token)
    command = [sys.executable, "-m", "chronicle_sandbox", "--workspace", str(tmp_path / "ws")]
    server = subprocess.Popen(
        [*command, "--port", "0", "--token-file", str(tmp_path / "token")],
        cwd=RUNTIME_IMAGE_DIR,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().split()[-1]
        yield f"http://127.0.0.1:{port}", token
    finally:
        server.kill()
        server.wait()


async def test_remote_runtime_drives_a_running_server(tcp_server: tuple[str, str]) -> None:
    url, token = tcp_server
    remote = RemoteRuntime(url, token)
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
    impostor = RemoteRuntime(url, "wrong")
    with pytest.raises(SandboxAuthError):
        await impostor.execute(Run(command="true"))
    await impostor.close()


async def test_remote_runtime_that_never_answers(tmp_path: Path) -> None:
    remote = RemoteRuntime("http://127.0.0.1:9", "token")
    with pytest.raises(SandboxStartError, match="not ready"):
        await remote.wait_ready(0.5)
    await remote.close()
