"""What every runtime offers: one sandbox, started, asked to run actions, and closed."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from app.events import Action, Observation


@runtime_checkable
class Runtime(Protocol):
    """A sandbox behind the action-server protocol (local process, container, or URL)."""

    async def start(self) -> None:
        """Create the sandbox (returns once it is launched, maybe not yet ready)."""

    async def wait_ready(self, timeout: float) -> None:
        """Wait until the sandbox answers; ``SandboxStartError`` after ``timeout`` seconds."""

    async def execute(self, action: Action, *, timeout: float | None = None) -> Observation:
        """Run one action; the observation's ``cause`` is left for the caller to set.

        ``timeout`` bounds an action that sets no timeout of its own; a sandbox that does not
        answer raises ``SandboxUnavailableError``.
        """
        ...

    async def upload(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` in the sandbox (parents are created)."""

    async def download(self, path: str) -> bytes:
        """The bytes of ``path`` in the sandbox."""
        ...

    async def alive(self) -> bool:
        """The liveness check: whether the sandbox's server answers (a dead one is restarted)."""
        ...

    async def heartbeat(self) -> None:
        """Tell the world this sandbox is still in use (reapers remove silent ones)."""

    async def close(self) -> None:
        """Stop and remove the sandbox."""
