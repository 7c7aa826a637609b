"""What a kind of sandbox is to the rest of Chronicle: a name and the few facts that differ
between kinds. The registry of them is ``app.runtime.kinds``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    from app.runtime.attached import ClientRuntime
    from app.runtime.config import RuntimeConfig
    from app.runtime.provisioner import Provisioner


def no_image(base_image: str) -> None:
    """A kind that runs no image records none."""
    return None


@dataclass(frozen=True)
class SandboxKind:
    """Everything outside ``app/runtime/<kind>/`` needs to know of one kind: how one is made,
    where the workspace is inside it, what ``session.created`` records of its image, and how a
    worker reaps the ones their owners left behind. A kind's module imports its runtime
    lazily inside ``make``, so that reading the registry (API models, ``--help``) starts
    nothing and imports no engine's SDK."""

    name: str
    make: Callable[[RuntimeConfig, Path, UUID | str], ClientRuntime]
    """A not-yet-started sandbox for a session, from the kind's part of the config."""
    workspace_inside: Callable[[str], str]
    """The workspace's path as commands (and so the agent) inside the sandbox see it, given
    its path on the host."""
    recorded_image: Callable[[str], str | None] = no_image
    """The image tag a session records (``SessionConfig.image``), from the base image."""
    reap_forever: Callable[[RuntimeConfig, float, float], Awaitable[None]] | None = None
    """``reap_forever(config, older_than, every)``: remove this kind's sandboxes whose heartbeat is
    stale, on a timer (a worker runs it); None where nothing outlives its owner."""
    provisioner: Callable[[RuntimeConfig], Provisioner | None] | None = None
    """The provisioner that places this kind's sandboxes when one does (docker with
    ``docker_hosts``: the host pool), else None. ``make`` uses one of its own per sandbox; a
    warm pool shares one, so that its sandboxes, started at once, are placed one by one."""
