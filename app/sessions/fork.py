"""``fork``: a new session that starts as a copy of another up to a seq, then goes on live.

The recorded start of the source's workspace is restored into a fresh directory, the copied
sandbox actions are run again there (what the environment answers differently is recorded
as ``environment.divergence``), and the fork is then resumed like any session, with the real
model, with an optional new message (and, from ``chronicle replay --on-divergence fork``, the
replay's agent overrides).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from app.agent.controller import Outcome
from app.config import Settings
from app.events import WorkspaceSnapshot
from app.replay.agent_config import AgentConfig
from app.replay.fork import (
    EnvironmentDivergence,
    ForkError,
    copy_prefix,
    divergence_events,
    prefix_of,
    reexecute,
)
from app.runtime.factory import make_runtime
from app.runtime.workspace_restore import restore
from app.runtime.workspace_state import WorkspaceStateError
from app.sessions.runner import SessionError, SessionOptions, recorded_config, run_session
from app.store import EventStore


async def fork_session(
    store: EventStore,
    settings: Settings,
    source: UUID,
    at: int,
    options: SessionOptions,
    *,
    message: str | None = None,
    fork_id: UUID | None = None,
    agent_config: AgentConfig | None = None,
) -> tuple[UUID, Outcome, list[EnvironmentDivergence]]:
    """Fork ``source`` at seq ``at`` and run the fork until it ends or needs the user.

    ``agent_config`` (a replay's overrides, for ``--on-divergence fork``) is recorded in the
    fork's ``session.created`` config, so its live run and a later replay of it use them."""
    fork_id = fork_id or uuid.uuid4()
    events = await store.read(source)
    try:
        prefix = prefix_of(events, at)
    except ForkError as exc:
        raise SessionError(str(exc)) from None
    config = recorded_config(events)
    snapshots = [e for e in events if e.kind == "workspace.snapshot"]
    if not snapshots:
        raise SessionError(
            f"session {source} recorded no workspace.snapshot (it predates workspace "
            "recording); it cannot be forked with its workspace"
        )
    snapshot = WorkspaceSnapshot.model_validate(snapshots[0].payload)
    workspace = options.workspace or settings.data_dir / "workspaces" / f"fork-{fork_id}"
    workspace = Path(os.path.abspath(workspace))  # noqa: ASYNC240 - no I/O beyond getcwd
    recorded_workspace = Path(config["workspace"]) if config.get("workspace") else None
    try:
        await restore(
            snapshot, workspace, repository=recorded_workspace,
            timeout=settings.workspace_snapshot_timeout,
        )  # fmt: skip
    except WorkspaceStateError as exc:
        raise SessionError(f"cannot restore the recorded workspace: {exc}") from None
    runtime_kind = options.runtime or config.get("runtime") or settings.runtime
    changes = {"workspace": str(workspace), "runtime": runtime_kind}
    if agent_config is not None:
        changes |= _agent_changes(config, agent_config)
    await copy_prefix(store, source, fork_id, prefix, changes)
    runtime = make_runtime(settings.runtime_config(), workspace, fork_id, runtime_kind)
    try:
        await runtime.start()
        await runtime.wait_ready(settings.sandbox_ready_timeout)
        divergences = await reexecute(runtime, prefix)
    finally:
        await runtime.close()
    if divergences:
        await store.append(fork_id, divergence_events(divergences))
    live = options.model_copy(update={"workspace": workspace, "runtime": runtime_kind})
    _, outcome = await run_session(store, settings, live, task=message, session_id=fork_id)
    return fork_id, outcome, divergences


def _agent_changes(config: dict[str, Any], agent_config: AgentConfig) -> dict[str, Any]:
    """The fork's ``session.created`` config changes for running with ``agent_config``: the
    overrides themselves (on top of any the source recorded), and the limit and tool list
    they set, where the runner and a reader look for them."""
    try:
        merged = agent_config.over(config.get("agent_config"))
        merged.llm_overrides()
    except (ValidationError, ValueError) as exc:
        raise SessionError(f"the agent configuration cannot be used live: {exc}") from None
    changes: dict[str, Any] = {"agent_config": merged.model_dump(mode="json")}
    if merged.max_iterations is not None:
        changes["max_iterations"] = merged.max_iterations
    if merged.tools is not None:
        changes["tools"] = list(merged.tools)
    return changes
