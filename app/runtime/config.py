"""What the sandboxes are told by whoever makes them; ``app/config.py`` builds these from the
``sandbox_*`` settings. Runtimes never read the application's ``Settings``
(docs/architecture.md, the import rule)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from app.runtime.docker.config import DockerConfig
from app.runtime.kinds import DEFAULT, RuntimeKind
from app.runtime.local.config import LocalConfig

__all__ = ["DockerConfig", "ExecutorConfig", "LocalConfig", "RuntimeConfig", "RuntimeKind"]


class RuntimeConfig(BaseModel):
    """The factory's inputs (``factory``): which sandbox a session gets and how each is made."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    kind: RuntimeKind = DEFAULT
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
