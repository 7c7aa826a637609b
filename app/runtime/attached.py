"""What every runtime does the same way once its action server is up: talk to it."""

from __future__ import annotations

from app.events import Action, Observation
from app.runtime.client import SandboxClient
from app.runtime.errors import SandboxStartError


class ClientRuntime:
    """Base of the runtimes: actions, files and heartbeats go through one ``SandboxClient``.

    Subclasses create ``self.client`` in ``start`` and say how to remove the sandbox.
    """

    name = "sandbox"
    client: SandboxClient | None = None

    async def start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    def _require_client(self) -> SandboxClient:
        if self.client is None:
            raise SandboxStartError(f"the {self.name} sandbox is not started; call start() first")
        return self.client

    async def wait_ready(self, timeout: float) -> None:
        await self._require_client().wait_ready(timeout)

    async def execute(self, action: Action, *, timeout: float | None = None) -> Observation:
        return await self._require_client().execute(action, timeout=timeout)

    async def upload(self, path: str, data: bytes) -> None:
        await self._require_client().upload(path, data)

    async def download(self, path: str) -> bytes:
        return await self._require_client().download(path)

    async def alive(self) -> bool:
        """Whether the action server answers its liveness check (False when not started)."""
        return self.client is not None and await self.client.alive()

    async def heartbeat(self) -> None:
        """Reset the sandbox's idle clock (reapers remove sandboxes that stay quiet)."""
        await self._require_client().heartbeat()

    async def _close_client(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None
