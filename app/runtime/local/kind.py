"""The local kind: a bubblewrap jail on this machine around the workspace in place."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from app.runtime.kind import SandboxKind

if TYPE_CHECKING:
    from app.runtime.attached import ClientRuntime
    from app.runtime.config import RuntimeConfig


def make(config: RuntimeConfig, workspace: Path, session_id: UUID | str) -> ClientRuntime:
    from app.runtime.local.runtime import LocalRuntime

    local = config.local
    return LocalRuntime(
        workspace,
        network=local.network,
        no_output_timeout=local.no_output_timeout,
        env=local.env,
        limits=local.limits,
        hidden_paths=local.hidden_paths,
        sandbox_uid=local.uid,
    )


KIND = SandboxKind(
    name="local",
    make=make,
    workspace_inside=lambda workspace: workspace,
)
