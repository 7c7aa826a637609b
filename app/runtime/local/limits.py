"""How much a sandbox may take: processes, memory, file size, CPU time (None = unlimited).

The local runtime enforces these with a cgroup of its own where it can make one (``cgroup``)
and with resource limits on the shell and every command it runs (set inside the sandbox).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

GIB = 1024**3
#: A size as Docker writes it: ``4g``, ``512m``, ``10gb``, ``1.5k``, ``2048`` (bytes).
DOCKER_SIZE = re.compile(r"(?i)\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*")
UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": GIB}


def size_in_bytes(text: str) -> int | None:
    """A size as Docker writes it in bytes (as ``docker.utils.parse_bytes``, whose import
    brings in Docker's SDK, which reading the settings must not); empty: None (no limit)."""
    if not text.strip():
        return None
    found = DOCKER_SIZE.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not a size as Docker writes it (4g, 512m, 1024)")
    return int(float(found[1]) * UNITS[found[2].lower()])


class SandboxLimits(BaseModel):
    """Per-sandbox limits; each None means unlimited."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    processes: int | None = Field(
        default=1024, gt=0, description="processes and threads at once (bounds fork loops)"
    )
    memory_bytes: int | None = Field(
        default=4 * GIB, gt=0, description="memory of the sandbox (also as Docker writes it: 4g)"
    )
    file_size_bytes: int | None = Field(
        default=10 * GIB,
        gt=0,
        description="largest file a command may write (also as Docker writes it: 10g; empty: "
        "no limit)",
    )
    cpu_seconds: int | None = Field(
        default=3600, gt=0, description="CPU time of each process (not of the whole sandbox)"
    )
    workspace_mb: int | None = Field(
        default=2048,
        gt=0,
        description="MB the workspace may grow beyond its size at the start (enforced by the "
        "action server: runtime_image/chronicle_sandbox/quota.py)",
    )

    @field_validator("memory_bytes", "file_size_bytes", mode="before")
    @classmethod
    def _docker_size(cls, value: object) -> object:
        """``sandbox_memory = "4g"`` (Docker's notation, which the Docker sandbox's memory
        takes as it is) is the local sandbox's 4 GiB."""
        return size_in_bytes(value) if isinstance(value, str) else value

    @classmethod
    def unlimited(cls) -> SandboxLimits:
        return cls(
            processes=None,
            memory_bytes=None,
            file_size_bytes=None,
            cpu_seconds=None,
            workspace_mb=None,
        )
