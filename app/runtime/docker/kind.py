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
    """The environment's engine's container; with ``docker_hosts``, one the pool places."""
    if config.docker.hosts:
        from app.runtime.docker.host_pool import DockerHostPool
        from app.runtime.remote import ProvisionedRuntime

        return ProvisionedRuntime(DockerHostPool(config.docker), workspace, session_id)
    from app.runtime.docker.runtime import DockerRuntime

    return DockerRuntime(workspace, session_id, config=config.docker)


def recorded_image(base_image: str) -> str:
    from app.runtime.image import image_tag

    return image_tag(base_image)


async def reap_forever(config: RuntimeConfig, older_than: float, every: float) -> None:
    """The reaper of the environment's engine, or of every host of ``docker_hosts``."""
    if config.docker.hosts:
        from app.runtime.docker.host_pool import DockerHostPool
        from app.runtime.provisioner import reap_forever as reap_provisioned

        await reap_provisioned(DockerHostPool(config.docker), older_than, every)
        return
    from app.runtime.docker.reaper import reap_forever as reap_on_a_timer

    await reap_on_a_timer(older_than, every)


KIND = SandboxKind(
    name="docker",
    make=make,
    workspace_inside=lambda workspace: WORKSPACE,
    recorded_image=recorded_image,
    reap_forever=reap_forever,
)
