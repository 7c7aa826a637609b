"""The default runtime: the action server as a child process on a loopback port.

The shell runs inside bubblewrap (read-only root, writable workspace, no network) when
``bwrap`` is installed; without it, commands run unconfined and a warning says so. File
actions are confined to the workspace by the server either way.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import logging
import os
import secrets
import shutil
import signal
import sys
from pathlib import Path
from typing import Literal

from app.runtime.attached import ClientRuntime
from app.runtime.client import SandboxClient
from app.runtime.errors import SandboxStartError
from app.runtime.image import RUNTIME_IMAGE_DIR

log = logging.getLogger(__name__)

READY_PREFIX = "CHRONICLE_SANDBOX_READY "
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when we die, so no sandbox outlives a crash."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class LocalRuntime(ClientRuntime):
    name = "local"

    def __init__(
        self,
        workspace: str | Path,
        *,
        jail: Literal["auto", "bwrap", "none"] = "auto",
        network: bool = False,
        no_output_timeout: float = 10.0,
        python: str = sys.executable,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.jail = jail
        self.network = network
        self.no_output_timeout = no_output_timeout
        self.python = python
        self.process: asyncio.subprocess.Process | None = None
        self.client: SandboxClient | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_task: asyncio.Task[None] | None = None

    def _jail(self) -> str:
        if self.jail != "auto":
            return self.jail
        if shutil.which("bwrap"):
            return "bwrap"
        log.warning(
            "bubblewrap (bwrap) is not installed: commands run without a sandbox, with this "
            "user's rights and network. Install it (apt-get install bubblewrap) to confine them."
        )
        return "none"

    async def start(self) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(32)
        env = {
            **os.environ,
            "PYTHONPATH": str(RUNTIME_IMAGE_DIR),
            "CHRONICLE_SANDBOX_TOKEN": token,
        }
        args = [
            "-m", "chronicle_sandbox",
            "--workspace", str(self.workspace),
            "--host", "127.0.0.1",
            "--port", "0",
            "--jail", self._jail(),
            "--no-output-timeout", str(self.no_output_timeout),
        ]  # fmt: skip
        if self.network:
            args.append("--network")
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.python,
                *args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group: close() takes it all down
                preexec_fn=die_with_parent,
            )
        except OSError as exc:
            raise SandboxStartError(f"could not run {self.python}: {exc}") from None
        self._stderr_task = asyncio.create_task(self._collect_stderr())
        port = await self._read_port()
        self.client = SandboxClient(f"http://127.0.0.1:{port}", token)

    async def _collect_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        async for line in self.process.stderr:
            self._stderr.append(line.decode(errors="replace").rstrip())

    async def _read_port(self) -> int:
        assert self.process is not None and self.process.stdout is not None
        try:
            async with asyncio.timeout(15):
                line = (await self.process.stdout.readline()).decode()
        except TimeoutError:
            line = ""
        if not line.startswith(READY_PREFIX):
            await self.close()
            detail = "\n".join(self._stderr) or "no output"
            raise SandboxStartError(f"the local sandbox did not start: {detail}")
        return int(line[len(READY_PREFIX) :])

    async def close(self) -> None:
        await self._close_client()
        process, self.process = self.process, None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                async with asyncio.timeout(5):
                    await process.wait()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task
            self._stderr_task = None
