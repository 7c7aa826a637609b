"""How much a sandbox may take: processes, memory, file size, CPU time (None = unlimited).

The local runtime enforces these with a cgroup of its own where it can make one (``cgroup``)
and with resource limits on the shell and every command it runs (set inside the sandbox).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

GIB = 1024**3


class SandboxLimits(BaseModel):
    """Per-sandbox limits; each None means unlimited."""

    model_config = ConfigDict(frozen=True)

    processes: int | None = Field(
        default=1024, gt=0, description="processes and threads at once (bounds fork loops)"
    )
    memory_bytes: int | None = Field(default=4 * GIB, gt=0, description="memory of the sandbox")
    file_size_bytes: int | None = Field(
        default=10 * GIB, gt=0, description="largest file a command may write"
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

    @classmethod
    def unlimited(cls) -> SandboxLimits:
        return cls(
            processes=None,
            memory_bytes=None,
            file_size_bytes=None,
            cpu_seconds=None,
            workspace_mb=None,
        )
