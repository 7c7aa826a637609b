"""What a worker runs for a session it claimed: a replay the API recorded, a fork the API
recorded, or (any other session) the session itself, resumed from its log.

The API never runs an agent. For a replay it records the replay session's
``session.created`` (``replay_of``, the mode, the overrides: ``app.replay.engine.
prepare_replay``); for a fork the copied events (``app.sessions.fork.record_fork``); then it
asks for a run. The worker tells them apart by their first events: a ``session.created`` with
``replay_of`` is replayed (unless its ``replay.result`` is there already), a fork whose log
holds only its copies and the user's events is restored and re-executed before it goes live
(``continue_fork``); everything else is ``run_session``.

A replay recorded with ``on_divergence: fork`` that diverged is forked where ``chronicle
replay --on-divergence fork`` forks (``fork_point``) with the replay's overrides, as the
replay's owner's session, and that fork is asked to run (its id is ``fork_id_of`` the
replay's, so the replay's result can name it without an event of its own).
"""

from __future__ import annotations

import uuid
from uuid import UUID

from pydantic import ValidationError

from app.config import Settings
from app.events.session_config import SessionConfig
from app.replay import AgentConfig, ReplayError, ReplayMode, ReplayResult, replay
from app.replay.fork import ForkError, fork_point
from app.sessions.fork import awaits_reexecution, continue_fork, fork_workspace, record_fork
from app.sessions.leases import request_run
from app.sessions.runner import RunningElsewhereError, SessionError, SessionOptions, run_session
from app.sessions.sql.session_owners import owner_of, record_owner
from app.sessions.step_gate import BeforeModelCall
from app.store import EventStore, RecordedEvent, SessionBusyError

#: ``on_divergence`` in a replay's ``session.created`` config: fork live at the divergence.
FORK_ON_DIVERGENCE = "fork"


def fork_id_of(replay_id: UUID) -> UUID:
    """The id of the fork a replay with ``on_divergence: fork`` makes when it diverges."""
    return uuid.uuid5(replay_id, "fork at the divergence")


async def run_claimed(
    store: EventStore,
    settings: Settings,
    session_id: UUID,
    options: SessionOptions,
    *,
    before_model_call: BeforeModelCall | None = None,
) -> object:
    """Run the session as what it is (see the module); ``SessionError`` when it cannot run."""
    head = await store.read(session_id, limit=1)
    created = head[0].payload if head and head[0].kind == "session.created" else {}
    if created.get("replay_of"):
        result = await run_recorded_replay(store, head[0])
        config = SessionConfig.of_payload(created)
        on_divergence = config.replay.on_divergence if config.replay is not None else None
        if result is not None and on_divergence == FORK_ON_DIVERGENCE:
            await fork_at_divergence(store, settings, result, config)
        return result
    if created.get("forked_from") and awaits_reexecution(await store.read(session_id)):
        return await continue_fork(
            store, settings, session_id, options, before_model_call=before_model_call
        )
    return await run_session(
        store, settings, options, session_id=session_id, before_model_call=before_model_call
    )


async def run_recorded_replay(store: EventStore, created: RecordedEvent) -> ReplayResult | None:
    """The replay whose ``session.created`` is ``created``, with the mode and overrides it
    recorded; None when it has its result already (a second request of the same run)."""
    replay_id = created.session_id
    events = await store.read(replay_id)
    if any(event.kind == "replay.result" for event in events):
        return None
    try:
        config = SessionConfig.of_payload(created.payload)
        agent_config = AgentConfig.model_validate(config.agent_config or {})
    except ValidationError as exc:
        raise SessionError(f"the replay's recorded agent_config cannot be used: {exc}") from None
    recorded_mode = config.replay.mode if config.replay is not None else None
    mode: ReplayMode = "positional" if recorded_mode == "positional" else "strict"
    try:
        return await replay(
            store,
            UUID(str(created.payload["replay_of"])),
            agent_config,
            mode=mode,
            replay_id=replay_id,
        )
    except SessionBusyError as exc:
        raise RunningElsewhereError(str(exc)) from None
    except ReplayError as exc:
        raise SessionError(f"the replay cannot run: {exc}") from None


async def fork_at_divergence(
    store: EventStore, settings: Settings, result: ReplayResult, config: SessionConfig
) -> UUID | None:
    """Fork the replayed session just before the replay's divergence, with the replay's
    overrides, as the replay's owner's session, and ask for its run; None when it matched."""
    if result.divergence is None:
        return None
    fork_id = fork_id_of(result.session_id)
    if await store.last_seq(fork_id) > 0:  # made by a run of this replay that then stopped
        return fork_id
    source = result.replay_of
    try:
        at = fork_point(await store.read(source), result.divergence)
        agent_config = AgentConfig.model_validate(config.agent_config or {})
    except (ForkError, ValidationError) as exc:
        raise SessionError(f"the replay diverged but cannot be forked there: {exc}") from None
    owner = await owner_of(store, result.session_id)
    if owner is not None:
        await record_owner(store, fork_id, owner)
    await record_fork(
        store, settings, source, at, fork_id=fork_id,
        workspace=fork_workspace(settings, fork_id), agent_config=agent_config,
    )  # fmt: skip
    await request_run(store, fork_id, reason="replay diverged")
    return fork_id
