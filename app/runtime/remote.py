"""Sandboxes that this process does not start itself: a server already running at a URL
(``RemoteRuntime``), or one a provisioner places on one of its hosts (``ProvisionedRuntime``:
the Docker host pool today, a Kubernetes provisioner tomorrow; ``app.runtime.provisioner``)."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from app.runtime.attached import ClientRuntime
from app.runtime.client import SandboxClient
from app.runtime.errors import SandboxStartError
from app.runtime.provisioner import Provisioner, Sandbox


class RemoteRuntime(ClientRuntime):
    """The same protocol as every other runtime; starting and removing it is someone else's."""

    name = "remote"

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.client = SandboxClient(url, token)

    async def start(self) -> None:
        """Nothing to start: the server already runs."""

    async def close(self) -> None:
        await self._close_client()


class ProvisionedRuntime(ClientRuntime):
    """A session's sandbox on a host a provisioner chose.

    The first ``start`` lets the provisioner place it; a restart (the executor's, after the
    sandbox died) asks for the same host, so a session moves only when it is resumed: if
    that host is gone, ``start`` raises ``HostLostError`` and the session is interrupted.
    """

    def __init__(self, provisioner: Provisioner, workspace: Path, session_id: UUID | str) -> None:
        self.provisioner = provisioner
        self.name = provisioner.kind
        self.workspace = Path(workspace).resolve()
        self.session_id = str(session_id)
        self.sandbox: Sandbox | None = None
        #: the host the session runs on, once placed (kept across restarts)
        self.host: str | None = None

    @property
    def sandbox_id(self) -> str:
        """``<name>@<host>``: what ``runtime.ready`` records, so the log says where it ran."""
        return f"{self.sandbox.sandbox_id}@{self.sandbox.host}" if self.sandbox else ""

    @property
    def image_id(self) -> str | None:
        return self.sandbox.image_id if self.sandbox else None

    async def start(self) -> None:
        self.sandbox = await self.provisioner.acquire(
            self.session_id, self.workspace, host=self.host
        )
        self.host = self.sandbox.host
        self.client = self.sandbox.client

    async def wait_ready(self, timeout: float) -> None:
        if self.sandbox is None:
            raise SandboxStartError(f"the {self.name} sandbox is not started; call start() first")
        await self.provisioner.wait_ready(self.sandbox, timeout)

    async def close(self) -> None:
        """Release the sandbox (its client goes with it)."""
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is None:
            return
        self.client = None
        try:
            await self.provisioner.release(sandbox.host, sandbox.sandbox_id)
        finally:
            await sandbox.client.close()
