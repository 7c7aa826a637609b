"""``fork``: a new session that starts as a copy of another up to a seq, then goes on live.

The recorded start of the source's workspace is restored into a fresh directory, the copied
sandbox actions are run again there (what the environment answers differently is recorded
as ``environment.divergence``), and the fork is then resumed like any session, with the real
model, with an optional new message, model and agent overrides (``chronicle fork``'s options,
the API's ``overrides``; from ``chronicle replay --on-divergence fork``, the replay's).

A fork of a replay session goes on with what the replay ran: its ``session.created`` (copied)
holds the replay's overrides (system prompt, tools, model parameters) in ``agent_config``, so
the fork keeps them unless it is given others; it is a live session, not a replay (the copy
drops ``replay_of`` and the replay's mode), and its workspace is restored from the start the
replayed session recorded (a replay records none of its own).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from app.agent.codeact import CodeActAgent
from app.agent.controller import Outcome
from app.agent.registry import UnknownAgent, agent_class
from app.config import Settings
from app.events import WorkspaceSnapshot
from app.events.session_config import SessionConfig
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
from app.sessions.step_gate import BeforeModelCall
from app.store import EventStore, RecordedEvent


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
    if options.agent is not None:  # `chronicle fork --agent NAME`: recorded as a replay's is
        agent_config = (agent_config or AgentConfig()).model_copy(update={"agent": options.agent})
    await forkable(store, source, at, agent_config=agent_config)  # before anything is restored
    workspace = options.workspace or fork_workspace(settings, fork_id)
    workspace = Path(os.path.abspath(workspace))  # noqa: ASYNC240 - no I/O beyond getcwd
    await _restore(store, settings, source, workspace, on_host=True)
    await record_fork(
        store, settings, source, at, fork_id=fork_id, workspace=workspace,
        runtime=options.runtime, agent_config=agent_config, model=options.model,
    )  # fmt: skip
    outcome, divergences = await _reexecute_and_run(
        store, settings, fork_id, options, message=message
    )
    return fork_id, outcome, divergences


def fork_workspace(settings: Settings, fork_id: UUID) -> Path:
    """Where a fork's workspace is restored unless told otherwise."""
    return settings.data_dir / "workspaces" / f"fork-{fork_id}"


async def record_fork(
    store: EventStore,
    settings: Settings,
    source: UUID,
    at: int,
    *,
    fork_id: UUID,
    workspace: Path,
    runtime: str | None = None,
    agent_config: AgentConfig | None = None,
    limits: dict[str, Any] | None = None,
    model: str | None = None,
) -> None:
    """Copy ``source``'s events up to ``at`` as the fork's first events (checked: ``at`` is a
    place to cut, the source recorded its workspace); ``SessionError`` says what is wrong.
    Nothing runs: ``continue_fork`` (a worker) restores, re-executes and runs it.
    ``agent_config`` changes the agent on top of what the source recorded (a replay's
    overrides are kept otherwise); ``model`` replaces the recorded model; ``limits``
    (``max_iterations``, ``max_cost_usd``) replace the recorded ones for the live run."""
    events = await store.read(source)
    prefix = await forkable(store, source, at, events)
    config = recorded_config(events)
    runtime_kind = runtime or config.runtime or settings.sandbox.kind
    changes: dict[str, Any] = {"workspace": str(workspace), "runtime": runtime_kind}
    if agent_config is not None:
        changes |= _agent_changes(config, agent_config)
    if model is not None:
        changes |= _model_changes(config, model)
    changes |= limits or {}
    await copy_prefix(store, source, fork_id, prefix, changes)


async def forkable(
    store: EventStore,
    source: UUID,
    at: int,
    events: list[RecordedEvent] | None = None,
    *,
    agent_config: AgentConfig | None = None,
) -> list[RecordedEvent]:
    """The events a fork of ``source`` at ``at`` copies (``events``: ``source``'s, when read
    already); ``SessionError`` when it cannot be forked there, its workspace's recorded start
    (a replay's: the replayed session's) is missing, or ``agent_config`` cannot run on top of
    what it recorded (a tool it does not have, an unknown agent)."""
    events = events if events is not None else await store.read(source)
    prefix = fork_prefix(events, at, source)
    start, start_events = await _start_of(store, source, events)
    _first_snapshot(start_events, start)
    if agent_config is not None:
        _agent_changes(recorded_config(events), agent_config)
    return prefix


def fork_prefix(events: list[RecordedEvent], at: int, source: UUID) -> list[RecordedEvent]:
    """The events a fork at ``at`` copies; ``SessionError`` when it cannot be forked there."""
    try:
        prefix = prefix_of(events, at)
    except ForkError as exc:
        raise SessionError(str(exc)) from None
    if not replay_of(events):  # a replay's start is the replayed session's: ``forkable``
        _first_snapshot(events, source)
    return prefix


def replay_of(events: list[RecordedEvent]) -> UUID | None:
    """The session ``events`` replay (None: they are not a replay's)."""
    origin = events[0].payload.get("replay_of") if events else None
    return UUID(str(origin)) if origin else None


async def _start_of(
    store: EventStore, source: UUID, events: list[RecordedEvent]
) -> tuple[UUID, list[RecordedEvent]]:
    """The session whose recorded workspace start a fork of ``source`` restores, and its
    events: ``source`` itself, or for a replay (which records no workspace of its own) the
    session it replays."""
    seen = {source}
    while not any(e.kind == "workspace.snapshot" for e in events):
        origin = replay_of(events)
        if origin is None or origin in seen:
            break
        seen.add(origin)
        source, events = origin, await store.read(origin)
    return source, events


def _first_snapshot(events: list[RecordedEvent], source: UUID) -> WorkspaceSnapshot:
    snapshots = [e for e in events if e.kind == "workspace.snapshot"]
    if not snapshots:
        raise SessionError(
            f"session {source} recorded no workspace.snapshot (it predates workspace "
            "recording); it cannot be forked with its workspace"
        )
    return WorkspaceSnapshot.model_validate(snapshots[0].payload)


async def _restore(
    store: EventStore, settings: Settings, source: UUID, workspace: Path, *, on_host: bool
) -> None:
    """The source's recorded start rebuilt in ``workspace``. ``on_host``: asked for by the
    user of this machine (``chronicle fork``), who may clone any repository of theirs; else
    (through the API) only from the places ``clonable`` allows."""
    start, events = await _start_of(store, source, await store.read(source))
    config = recorded_config(events)
    snapshot = _first_snapshot(events, start)
    recorded_workspace = Path(config.workspace) if config.workspace else None
    if not on_host and snapshot.vcs == "git" and recorded_workspace is not None:
        await asyncio.to_thread(clonable, settings, recorded_workspace)
    try:
        await restore(
            snapshot, workspace, repository=recorded_workspace,
            timeout=settings.workspace_snapshot_timeout, sandbox_uid=settings.sandbox.docker.uid,
        )  # fmt: skip
    except WorkspaceStateError as exc:
        raise SessionError(f"cannot restore the recorded workspace: {exc}") from None


def clonable(settings: Settings, repository: Path) -> None:
    """SessionError unless ``repository`` (where the source recorded its workspace: a git
    start is cloned from there) lies in Chronicle's data directory or a ``workspace_roots``
    entry, the only places an API user's session can have worked in. The path is the log's
    word, and a session the API did not make (``chronicle import``, an application login) may
    name any repository on this host, for a fork to check out and its owner to read."""
    real = Path(os.path.realpath(repository))
    for root in (settings.data_dir, *settings.server.workspace_roots):
        allowed = Path(os.path.realpath(root))
        if real == allowed or real.is_relative_to(allowed):
            _own_objects(repository)
            return
    raise SessionError(
        f"the session recorded its workspace at {repository}, outside Chronicle's data "
        "directory and the configured workspace_roots: a fork started through the API clones "
        "only from there. Fork it on the host with `chronicle fork`, or add the directory "
        "to workspace_roots"
    )


def _own_objects(repository: Path) -> None:
    """SessionError unless ``repository``'s ``.git`` (and its objects) is a directory of its
    own that borrows no objects: its session's sandbox could write there, and a link, a
    ``gitdir:`` file or an alternates file would have the clone read another repository."""
    git_dir = repository / ".git"
    for directory in (git_dir, git_dir / "objects"):
        if not directory.is_dir() or directory.is_symlink():
            raise SessionError(
                f"{directory} is not a directory of its own (a link, or a gitdir file): a "
                "fork started through the API does not clone through it"
            )
    if (git_dir / "objects" / "info" / "alternates").exists():
        raise SessionError(
            f"{repository} borrows objects of another repository (objects/info/alternates): a "
            "fork started through the API does not clone from it"
        )


def awaits_reexecution(events: list[RecordedEvent]) -> bool:
    """A fork ``record_fork`` recorded that no run has started yet: past its copied events
    there are only the user's (a message sent with the fork)."""
    if not events or events[0].kind != "session.created":
        return False
    if not events[0].payload.get("forked_from"):
        return False
    return all(e.payload.get("replayed_from") is not None or e.source == "user" for e in events)


async def continue_fork(
    store: EventStore,
    settings: Settings,
    fork_id: UUID,
    options: SessionOptions,
    *,
    before_model_call: BeforeModelCall | None = None,
) -> tuple[Outcome, list[EnvironmentDivergence]]:
    """Run a fork ``record_fork`` recorded: its source's workspace restored where the fork
    recorded it (a restore a stopped worker left half-done is started again), the copied
    sandbox actions run again there, then the session live until it ends or needs the user."""
    events = await store.read(fork_id)
    if not awaits_reexecution(events):
        raise SessionError(f"session {fork_id} is not a fork waiting to be run")
    source = UUID(str(events[0].payload["forked_from"]))
    workspace = _recorded_workspace(recorded_config(events), fork_id)
    if workspace == fork_workspace(settings, fork_id):  # ours alone: clear a half-done restore
        await asyncio.to_thread(shutil.rmtree, workspace, ignore_errors=True)
    await _restore(store, settings, source, workspace, on_host=False)
    return await _reexecute_and_run(
        store, settings, fork_id, options, before_model_call=before_model_call
    )


async def _reexecute_and_run(
    store: EventStore,
    settings: Settings,
    fork_id: UUID,
    options: SessionOptions,
    *,
    message: str | None = None,
    before_model_call: BeforeModelCall | None = None,
) -> tuple[Outcome, list[EnvironmentDivergence]]:
    """The fork's copied sandbox actions run again over its restored workspace (differences
    recorded), then the fork run live."""
    events = await store.read(fork_id)
    config = recorded_config(events)
    workspace = _recorded_workspace(config, fork_id)
    runtime_kind = str(config.runtime or settings.sandbox.kind)
    prefix = [e for e in events if e.payload.get("replayed_from") is not None]
    runtime = make_runtime(settings.runtime_config(), workspace, fork_id, runtime_kind)
    try:
        await runtime.start()
        await runtime.wait_ready(settings.sandbox.ready_timeout)
        divergences = await reexecute(runtime, prefix)
    finally:
        await runtime.close()
    if divergences:
        await store.append(fork_id, divergence_events(divergences))
    live = options.model_copy(update={"workspace": workspace, "runtime": runtime_kind})
    _, outcome = await run_session(
        store, settings, live, task=message, session_id=fork_id,
        before_model_call=before_model_call,
    )  # fmt: skip
    return outcome, divergences


def _recorded_workspace(config: SessionConfig, fork_id: UUID) -> Path:
    """Where ``record_fork`` recorded the fork's workspace."""
    if not config.workspace:
        raise SessionError(f"session {fork_id} recorded no workspace: it cannot be run")
    return Path(config.workspace)


def _agent_changes(config: SessionConfig, agent_config: AgentConfig) -> dict[str, Any]:
    """The fork's ``session.created`` config changes for running with ``agent_config``: the
    overrides themselves (on top of any the source recorded), and the limit and tool list
    they set, where the runner and a reader look for them."""
    try:
        merged = agent_config.over(config.agent_config)
        merged.llm_overrides()
    except (ValidationError, ValueError) as exc:
        raise SessionError(f"the agent configuration cannot be used live: {exc}") from None
    try:
        agent_type = agent_class(merged.agent)
    except UnknownAgent as exc:
        raise SessionError(str(exc)) from None
    if merged.tools is not None:
        known = [*agent_type.builtin_tool_names(), *(n for n in config.tools or [] if "__" in n)]
        unknown = sorted(set(merged.tools) - set(known))
        if unknown:
            raise SessionError(
                f"there is no tool {', '.join(unknown)}; the tools are: {', '.join(known)}"
            )
    changes: dict[str, Any] = {
        "agent": agent_type.name,
        "agent_config": merged.model_dump(mode="json"),
    }
    if merged.max_iterations is not None:
        changes["max_iterations"] = merged.max_iterations
    if merged.tools is not None:
        changes["tools"] = list(merged.tools)
    elif agent_type.name != config.given("agent", CodeActAgent.name):
        mcp = [name for name in config.tools or [] if "__" in name]
        changes["tools"] = [*agent_type.builtin_tool_names(), *mcp]
    return changes


def _model_changes(config: SessionConfig, model: str) -> dict[str, Any]:
    """The fork's ``session.created`` config changes for running with ``model``: the model,
    and the model settings recorded with it (a replay's) naming it too."""
    changes: dict[str, Any] = {"model": model}
    if config.llm is not None:
        changes["llm"] = {**config.llm.stored(), "model": model}
    return changes
