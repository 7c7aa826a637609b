"""A sandbox server running anywhere, reached by URL and token."""

from __future__ import annotations

from app.runtime.attached import ClientRuntime
from app.runtime.client import SandboxClient


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
