"""How a Docker sandbox is made: the docker kind's part of ``RuntimeConfig``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DockerConfig(BaseModel):
    """How a Docker sandbox is made and confined (``app.runtime.docker.hardening``)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    base_image: str = "python:3.12-slim-bookworm"
    """Base of the sandbox image (any image with python3 and bash)."""
    network: bool = False
    """Commands may use the network (else the container has none)."""
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Host variables passed in by name (values: they may be secrets, so never in a repr)."""
    no_output_timeout: float = Field(default=10.0, gt=0)
    """Seconds without output before a command is reported as still running."""
    cpus: float = Field(default=2.0, gt=0)
    """CPUs of the sandbox (Docker's only: a local sandbox has none of its own)."""
    memory: str = "4g"
    """Memory limit as Docker writes it (also the swap limit: no swap beyond it)."""
    pids_limit: int = Field(default=1024, gt=0)
    """Processes and threads at once (bounds fork bombs)."""
    uid: int = Field(default=10001, gt=0)
    """The sandbox's uid and gid when Chronicle runs as root on a root-owned workspace."""
    disk_quota: str | None = "10g"
    """Writable-layer size (``storage_opt``) where the storage driver enforces one (else
    skipped, logged once); empty for none."""
    tmpfs_size: str = "1g"
    """Size of /tmp and of the home (tmpfs, in memory)."""
    heartbeat_interval: float = Field(default=30.0, gt=0)
    """Recorded on the container for the reaper: how often its owner touches it."""
    workspace_limit_mb: int | None = Field(default=2048, gt=0)
    """MB the sandbox may add to its (bind-mounted) workspace, which the writable layer's
    quota does not cover; the action server enforces it (None: no limit)."""
