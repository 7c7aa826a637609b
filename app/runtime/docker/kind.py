"""The docker kind: a hardened container per session, the workspace bind-mounted at
``WORKSPACE``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from app.runtime.kind import SandboxKind

if TYPE_CHECKING:
    from app.runtime.attached import ClientRuntime
    from app.runtime.config import RuntimeConfig

#: Where the session's workspace is mounted inside the container.
WORKSPACE = "/workspace"


def make(config: RuntimeConfig, workspace: Path, session_id: UUID | str) -> ClientRuntime:
    from app.runtime.docker.runtime import DockerRuntime

    return DockerRuntime(workspace, session_id, config=config.docker)


def recorded_image(base_image: str) -> str:
    from app.runtime.image import image_tag

    return image_tag(base_image)


async def reap_forever(older_than: float, every: float) -> None:
    from app.runtime.docker.reaper import reap_forever as reap_on_a_timer

    await reap_on_a_timer(older_than, every)


KIND = SandboxKind(
    name="docker",
    make=make,
    workspace_inside=lambda workspace: WORKSPACE,
    recorded_image=recorded_image,
    reap_forever=reap_forever,
)
