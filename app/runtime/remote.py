"""A sandbox server running anywhere, reached by URL and token."""

from __future__ import annotations

from app.events import Action, Observation
from app.runtime.client import SandboxClient


class RemoteRuntime:
    """The same protocol as every other runtime; starting and removing it is someone else's."""

    name = "remote"

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.client = SandboxClient(url, token)

    async def start(self) -> None:
        """Nothing to start: the server already runs."""

    async def wait_ready(self, timeout: float) -> None:
        await self.client.wait_ready(timeout)

    async def execute(self, action: Action, *, timeout: float | None = None) -> Observation:
        return await self.client.execute(action, timeout=timeout)

    async def upload(self, path: str, data: bytes) -> None:
        await self.client.upload(path, data)

    async def download(self, path: str) -> bytes:
        return await self.client.download(path)

    async def heartbeat(self) -> None:
        """The remote side keeps its own liveness."""

    async def close(self) -> None:
        await self.client.close()
