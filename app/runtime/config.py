"""What the sandboxes are told by whoever makes them: the settings hold a ``RuntimeConfig``
(``settings.sandbox``, the ``sandbox_*`` settings) and an ``ExecutorConfig``
(``settings.executor``). Runtimes never read the application's ``Settings``
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

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    kind: RuntimeKind = DEFAULT
    """The runtime of a session that names none."""
    local: LocalConfig = Field(default_factory=LocalConfig)
    docker: DockerConfig = Field(default_factory=DockerConfig)
    workspaces_dir: Path | None = None
    """Where warm pooled sandboxes get their workspaces (one directory each); the settings
    put their data directory's ``workspaces`` (None: no pool can be made)."""
    pool_size: int = Field(default=0, ge=0)
    """Warm sandboxes kept started."""
    ready_timeout: float = Field(default=30.0, gt=0)
    """Seconds a starting (or restarted) sandbox may take to answer."""


class ExecutorConfig(BaseModel):
    """How long actions may take, how often the sandbox is heartbeated, how it is restarted."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    action_timeouts: dict[str, float] = Field(
        default_factory=lambda: {
            "run": 120.0,
            "file.read": 30.0,
            "file.write": 30.0,
            "file.edit": 30.0,
        }
    )
    """Seconds an action of each kind may take when it sets no timeout itself (a kind not
    named: no limit)."""
    heartbeat_interval: float = Field(default=30.0, gt=0)
    """Seconds between the heartbeats a sandbox's owner sends it."""
    ready_timeout: float = Field(default=30.0, gt=0)
    """Seconds a restarted sandbox may take to answer."""
    max_restarts: int = Field(default=3, ge=0)
    """Times one run restarts a sandbox that died (failed its liveness check) before the run
    ends in error; 0 ends it at the first death."""
