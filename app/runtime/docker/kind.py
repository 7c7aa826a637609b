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
    from app.runtime.provisioner import Provisioner

#: Where the session's workspace is mounted inside the container.
WORKSPACE = "/workspace"


def provisioner(config: RuntimeConfig) -> Provisioner | None:
    """The host pool of ``docker_hosts``, or None: the environment's one engine."""
    if not config.docker.hosts:
        return None
    from app.runtime.docker.host_pool import DockerHostPool

    return DockerHostPool(config.docker)


def make(config: RuntimeConfig, workspace: Path, session_id: UUID | str) -> ClientRuntime:
    """The environment's engine's container; with ``docker_hosts``, one the pool places."""
    pool = provisioner(config)
    if pool is not None:
        from app.runtime.remote import ProvisionedRuntime

        return ProvisionedRuntime(pool, workspace, session_id)
    from app.runtime.docker.runtime import DockerRuntime

    return DockerRuntime(workspace, session_id, config=config.docker)


def recorded_image(base_image: str) -> str:
    from app.runtime.image import image_tag

    return image_tag(base_image)


async def reap_forever(config: RuntimeConfig, older_than: float, every: float) -> None:
    """The reaper of the environment's engine, or of every host of ``docker_hosts``."""
    pool = provisioner(config)
    if pool is not None:
        from app.runtime.provisioner import reap_forever as reap_provisioned

        await reap_provisioned(pool, older_than, every)
        return
    from app.runtime.docker.reaper import reap_forever as reap_on_a_timer

    await reap_on_a_timer(older_than, every)


KIND = SandboxKind(
    name="docker",
    make=make,
    workspace_inside=lambda workspace: WORKSPACE,
    recorded_image=recorded_image,
    reap_forever=reap_forever,
    provisioner=provisioner,
)
