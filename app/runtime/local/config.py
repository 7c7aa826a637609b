"""How a local (bubblewrap) sandbox is made: the local kind's part of ``RuntimeConfig``."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from app.runtime.local.limits import SandboxLimits


class LocalConfig(BaseModel):
    """How a local (bubblewrap) sandbox is made."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

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
