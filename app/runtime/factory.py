"""Runtimes and warm pools made from the settings (``runtime``, ``sandbox_*``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from uuid import UUID

from docker.utils import parse_bytes

from app.config import Settings, default_config_file
from app.runtime.attached import ClientRuntime
from app.runtime.docker import DockerRuntime
from app.runtime.limits import SandboxLimits
from app.runtime.local import LocalRuntime
from app.runtime.pool import SandboxPool


def local_limits(settings: Settings) -> SandboxLimits:
    """The local sandbox's limits from the settings (sizes as Docker writes them: 4g, 512m)."""
    file_size = settings.sandbox_file_size_limit
    return SandboxLimits(
        processes=settings.sandbox_pids_limit,
        memory_bytes=parse_bytes(settings.sandbox_memory),
        file_size_bytes=parse_bytes(file_size) if file_size else None,
        cpu_seconds=settings.sandbox_cpu_seconds,
    )


def make_runtime(
    settings: Settings, workspace: str | Path, session_id: UUID | str, kind: str | None = None
) -> ClientRuntime:
    """A not-yet-started sandbox of ``kind`` (default: ``settings.runtime``) for a session."""
    kind = kind or settings.runtime
    if kind == "docker":
        return DockerRuntime(workspace, session_id, settings=settings)
    if kind == "local":
        return LocalRuntime(
            workspace,
            network=settings.sandbox_network,
            no_output_timeout=settings.sandbox_no_output_timeout,
            env=settings.sandbox_environment(),
            limits=local_limits(settings),
            hidden_paths=(default_config_file(), settings.data_dir),
        )
    raise ValueError(f"unknown runtime {kind!r}; use 'local' or 'docker'")


def make_pool(settings: Settings, kind: str | None = None) -> SandboxPool:
    """``sandbox_pool_size`` warm sandboxes, each with a workspace of its own in data_dir."""

    def fresh() -> ClientRuntime:
        sandbox_id = uuid.uuid4()
        workspace = settings.data_dir / "workspaces" / str(sandbox_id)
        return make_runtime(settings, workspace, sandbox_id, kind)

    return SandboxPool(
        fresh, settings.sandbox_pool_size, ready_timeout=settings.sandbox_ready_timeout
    )
