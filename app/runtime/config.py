"""What the sandboxes are told by whoever makes them; ``app/config.py`` builds these from the
``sandbox_*`` settings. Runtimes never read the application's ``Settings``
(docs/architecture.md, the import rule)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.runtime.local.limits import SandboxLimits

RuntimeKind = Literal["local", "docker"]


class LocalConfig(BaseModel):
    """How a local (bubblewrap) sandbox is made."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    network: bool = False
    """Commands may use the network."""
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Host variables passed in by name (values: they may be secrets, so never in a repr)."""
    no_output_timeout: float = Field(default=10.0, gt=0)
    """Seconds without output before a command is reported as still running."""
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    hidden_paths: tuple[Path, ...] = ()
    """Paths the sandbox must not see even where the system is visible (the settings file,
    the data directory)."""
    uid: int = Field(default=10001, gt=0)
    """The jail's uid and gid on the host when Chronicle runs as root on a root-owned (or new)
    workspace: the jail's root is this unprivileged user outside."""


class DockerConfig(BaseModel):
    """How a Docker sandbox is made and confined (``app.runtime.docker.hardening``)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    base_image: str = "python:3.12-slim-bookworm"
    """Base of the sandbox image (any image with python3 and bash)."""
    network: bool = False
    """Commands may use the network (else the container has none)."""
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Host variables passed in by name (values: they may be secrets, so never in a repr)."""
    no_output_timeout: float = Field(default=10.0, gt=0)
    """Seconds without output before a command is reported as still running."""
    cpus: float = Field(default=2.0, gt=0)
    memory: str = "4g"
    """Memory limit as Docker writes it (also the swap limit: no swap beyond it)."""
    pids_limit: int = Field(default=1024, gt=0)
    uid: int = Field(default=10001, gt=0)
    """The sandbox's uid and gid when Chronicle runs as root on a root-owned workspace."""
    disk_quota: str | None = "10g"
    """Writable-layer size (``storage_opt``) where the storage driver enforces one."""
    tmpfs_size: str = "1g"
    """Size of /tmp and of the home (tmpfs, in memory)."""
    heartbeat_interval: float = Field(default=30.0, gt=0)
    """Recorded on the container for the reaper: how often its owner touches it."""
    workspace_limit_mb: int | None = Field(default=2048, gt=0)
    """MB the sandbox may add to its (bind-mounted) workspace, which the writable layer's
    quota does not cover; the action server enforces it (None: no limit)."""


class RuntimeConfig(BaseModel):
    """The factory's inputs (``factory``): which sandbox a session gets and how each is made."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    kind: RuntimeKind = "local"
    """The runtime of a session that names none."""
    local: LocalConfig = Field(default_factory=LocalConfig)
    docker: DockerConfig = Field(default_factory=DockerConfig)
    workspaces_dir: Path
    """Where warm pooled sandboxes get their workspaces (one directory each)."""
    pool_size: int = Field(default=0, ge=0)
    """Warm sandboxes kept started."""
    ready_timeout: float = Field(default=30.0, gt=0)
    """Seconds a starting sandbox may take to answer."""


class ExecutorConfig(BaseModel):
    """How long actions may take, how often the sandbox is heartbeated, how it is restarted."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    action_timeouts: dict[str, float] = Field(default_factory=dict)
    """Seconds an action of each kind may take when it sets no timeout itself."""
    heartbeat_interval: float = Field(default=30.0, gt=0)
    ready_timeout: float = Field(default=30.0, gt=0)
    """Seconds a restarted sandbox may take to answer."""
    max_restarts: int = Field(default=3, ge=0)
    """Times one run restarts a sandbox that died before the run ends in error."""
