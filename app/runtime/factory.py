"""Runtimes and warm pools made from a ``RuntimeConfig`` (``settings.runtime_config()``).

The factory stays in runtime, not in sessions: which kinds of sandbox exist and how each is
made is the runtime's knowledge, and the CLI, the benchmarks and sessions all make them.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from uuid import UUID

from app.runtime.attached import ClientRuntime
from app.runtime.config import RuntimeConfig
from app.runtime.kinds import sandbox_kind
from app.runtime.pool import SandboxPool
from app.runtime.remote import ProvisionedRuntime


def make_runtime(
    config: RuntimeConfig, workspace: str | Path, session_id: UUID | str, kind: str | None = None
) -> ClientRuntime:
    """A not-yet-started sandbox of ``kind`` (default: ``config.kind``) for a session."""
    return sandbox_kind(kind or config.kind).make(config, Path(workspace), session_id)


def make_pool(config: RuntimeConfig, kind: str | None = None) -> SandboxPool:
    """``config.pool_size`` warm sandboxes, each with a workspace of its own (placed on the
    kind's hosts, when a provisioner places them, by one provisioner)."""

    workspaces = config.workspaces_dir
    if workspaces is None:
        raise ValueError("a sandbox pool needs a workspaces_dir for its sandboxes' workspaces")

    of_kind = sandbox_kind(kind or config.kind)
    provisioner = of_kind.provisioner(config) if of_kind.provisioner is not None else None

    def fresh() -> ClientRuntime:
        sandbox_id = uuid.uuid4()
        if provisioner is not None:  # one placer for all: they start at once
            return ProvisionedRuntime(provisioner, workspaces / str(sandbox_id), sandbox_id)
        return make_runtime(config, workspaces / str(sandbox_id), sandbox_id, kind)

    return SandboxPool(fresh, config.pool_size, ready_timeout=config.ready_timeout)
