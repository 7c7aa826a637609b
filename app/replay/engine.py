"""``replay()``: run the real agent and controller against a recorded session, as a session of
its own in the same tables.

The replay session starts with ``session.created`` (``replay_of``, the mode and the agent
configuration used), gets the recording's user events where they were recorded, and runs a
fresh ``AgentController`` with a ``CodeActAgent`` over a ``ReplayGateway``; the replay's log
(``AnsweringLog``) answers each action from the recording as it is appended, where a live
session's action workers answer it, and an action it cannot answer ends the run in ``error``
as a live worker's stop does. It ends with a ``replay.result`` event, whose content
``ReplayResult`` is.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, ValidationError

from app.agent.codeact import CodeActAgent
from app.agent.controller import AgentController, Limits
from app.agent.registry import UnknownAgent, agent_class
from app.agent.stuck import StuckConfig
from app.agent.tools import BUILTIN_TOOLS
from app.errors import ChronicleError
from app.events import AgentState, Event, ReplayResultEvent, SessionCreated, new_event_id
from app.events.registry import SERVICES
from app.events.session_config import ModelSettings, ReplayOrigin
from app.llm import LlmConfig
from app.replay.agent_config import AgentConfig
from app.replay.answers import RecordedAnswers
from app.replay.divergence import (
    Divergence,
    MissingCall,
    OutcomeDivergence,
    RequestDivergence,
    redacted,
)
from app.replay.gateway import ReplayGateway
from app.replay.log import AnsweringLog
from app.replay.progress import ReplayDiverged, ReplayMode, ReplayProgress
from app.replay.recording import (
    Recording,
    RecordingError,
    RecordingRedacted,
    Segment,
    store_pages,
    stream_recording,
)
from app.runtime.kinds import workspace_inside
from app.store import EventStore, RecordedEvent, WorkerStopped, claim_session

__all__ = ["RedactedReplayError", "ReplayError", "ReplayMode", "ReplayResult", "replay"]

#: The cancellation message of a replay whose database went away.
DATABASE_GONE = "the database went away"

BUILTIN_NAMES = [tool["function"]["name"] for tool in BUILTIN_TOOLS]


class ReplayError(ChronicleError):
    """The session cannot be replayed; the message says why and what to do."""


class RedactedReplayError(ReplayError):
    """The session cannot be replayed at all: what sets its agent up was redacted."""


class ReplayResult(BaseModel):
    """How a replay went: ``matched`` when it ended as recorded with no difference at all
    (no divergence stopped it, and a positional replay reported no request difference).

    ``steps_*`` count model calls: in the recording, served from it, and served with the
    same request and the same consequences. ``differences`` are the request differences a
    positional replay reported and went on after.
    """

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    replay_of: UUID
    mode: ReplayMode
    matched: bool
    outcome: str | None
    recorded_outcome: str | None
    steps_recorded: int
    steps_served: int
    steps_matched: int
    divergence: Divergence | None
    differences: list[RequestDivergence]
    model_calls: int
    seconds: float


class _Plan(BaseModel):
    """What a replay of one recording runs with, checked: the recording, the overrides on top
    of what it recorded, the agent class and the gateway settings."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    recording: Recording
    agent_config: AgentConfig
    agent_type: Any
    llm: LlmConfig


async def _plan(store: EventStore, session_id: UUID, agent_config: AgentConfig | None) -> _Plan:
    """Everything checked before anything is written: a recording that cannot be replayed is
    refused here, leaving no replay session behind."""
    if not await store.read(session_id, limit=1):
        raise ReplayError(f"there is no session {session_id}; `chronicle sessions` lists them")
    try:
        recording = await stream_recording(store_pages(store, session_id))
    except RecordingError as exc:
        refused = RedactedReplayError if isinstance(exc, RecordingRedacted) else ReplayError
        raise refused(f"session {session_id} cannot be replayed: {exc}") from None
    # A fork made by `--on-divergence fork` ran live with the overrides it recorded; a run
    # with `--agent NAME` with that agent.
    try:
        agent_config = (agent_config or AgentConfig()).over(_recorded_overrides(recording))
    except ValidationError as exc:
        raise ReplayError(f"the recorded agent_config cannot be used: {exc}") from None
    try:
        agent_type = agent_class(agent_config.agent)
    except UnknownAgent as exc:
        raise ReplayError(str(exc)) from None
    try:
        llm = _llm_config(recording, agent_config)
    except ValueError as exc:
        raise ReplayError(f"session {session_id} cannot be replayed: {exc}") from None
    return _Plan(recording=recording, agent_config=agent_config, agent_type=agent_type, llm=llm)


def _limits(plan: _Plan) -> Limits:
    recording = plan.recording
    return Limits(
        max_iterations=plan.agent_config.max_iterations
        or max(recording.config.max_iterations or 100, len(recording.call_seqs)),
        max_cost_usd=recording.config.max_cost_usd,
    )


def _created(
    plan: _Plan,
    agent: CodeActAgent,
    mode: ReplayMode,
    session_id: UUID,
    user: str | None = None,
) -> SessionCreated:
    """The replay session's first event: the recording's configuration with what the replay
    runs (agent, model, tools, limit, mode, overrides)."""
    config = plan.recording.config.with_keys(
        agent=plan.agent_type.name,
        model=plan.llm.model,
        llm=plan.llm.public(),
        tools=[tool["function"]["name"] for tool in agent.tools()],
        max_iterations=_limits(plan).max_iterations,
        **ReplayOrigin(mode=mode).stored(),
        agent_config=plan.agent_config.model_dump(mode="json"),
    )
    return SessionCreated(
        title=f"replay of {_title(plan.recording)}"[:200],
        config=config,
        replay_of=session_id,
        user=user,
    )


async def prepare_replay(
    store: EventStore,
    session_id: UUID,
    agent_config: AgentConfig | None,
    *,
    mode: ReplayMode,
    replay_id: UUID,
    user: str | None = None,
) -> SessionCreated:
    """Check that ``session_id`` can be replayed so, and return the replay session's
    ``session.created`` for the caller to record; another process then runs it (``replay``
    with this ``replay_id``). ``ReplayError`` says what cannot be replayed."""
    plan = await _plan(store, session_id, agent_config)
    progress = ReplayProgress(store, replay_id, plan.recording, mode)
    gateway = ReplayGateway(store, plan.llm, progress)
    agent = await _agent(store, plan.recording, plan.agent_config, plan.agent_type, gateway)
    return _created(plan, agent, mode, session_id, user)


def _recorded_start(events: list[RecordedEvent], session_id: UUID) -> list[RecordedEvent]:
    """A replay session ``prepare_replay`` made and nobody ran yet: its one event."""
    if not events:
        return []
    first = events[0]
    if first.kind != "session.created" or first.payload.get("replay_of") != str(session_id):
        raise ReplayError(f"session {first.session_id} is not a replay of {session_id}")
    if len(events) > 1:
        raise ReplayError(
            f"replay {first.session_id} was started already and did not end (the process "
            "running it stopped); start a new replay"
        )
    return events


async def replay(
    store: EventStore,
    session_id: UUID,
    agent_config: AgentConfig | None = None,
    *,
    mode: ReplayMode = "strict",
    replay_id: UUID | None = None,
) -> ReplayResult:
    """Replay ``session_id`` (see the module) and return how it went; ``ReplayError`` when
    the session cannot be replayed (no session, not started by a run, ...).

    ``replay_id`` names the replay session: by default a new one; or one that
    ``prepare_replay`` made (then ``agent_config`` and ``mode`` are those it recorded)."""
    started = time.monotonic()
    plan = await _plan(store, session_id, agent_config)
    recording, agent_config = plan.recording, plan.agent_config
    recorded = await store.read(replay_id) if replay_id is not None else []
    recorded = _recorded_start(recorded, session_id)
    replay_id = replay_id or uuid.uuid4()
    # the replay's own log: in memory, then written
    log = AnsweringLog(store, replay_id, existing=recorded)
    try:
        progress = ReplayProgress(log, replay_id, recording, mode)
        gateway = ReplayGateway(log, plan.llm, progress)
        agent = await _agent(store, recording, agent_config, plan.agent_type, gateway)
        limits = _limits(plan)
        if not recorded:
            await log.append(replay_id, [_created(plan, agent, mode, session_id)], expected_seq=0)
            await log.flush()  # the session exists (and can be claimed) from here on
        outcome = await _claimed_run(
            log, replay_id, recording, progress, agent, agent_config, limits
        )
        matched = progress.divergence is None and not progress.differences
        result = ReplayResult(
            session_id=replay_id,
            replay_of=session_id,
            mode=mode,
            matched=matched,
            outcome=outcome,
            recorded_outcome=recording.outcome,
            steps_recorded=len(recording.call_seqs),
            steps_served=progress.served,
            steps_matched=progress.matched,
            divergence=progress.divergence,
            differences=progress.differences,
            model_calls=gateway.model_calls,
            seconds=time.monotonic() - started,
        )
        await log.append(
            replay_id,
            [
                ReplayResultEvent.model_validate(
                    result.model_dump(mode="json", exclude={"session_id"})
                )
            ],
        )
        await log.flush()
        return result
    finally:
        with contextlib.suppress(Exception):  # written above unless it failed
            await log.close()


async def _claimed_run(
    log: AnsweringLog,
    replay_id: UUID,
    recording: Recording,
    progress: ReplayProgress,
    agent: CodeActAgent,
    agent_config: AgentConfig,
    limits: Limits,
) -> str | None:
    """``_run_segments`` holding the replay session's claim, as a live run holds its own, so
    a reader sees the replay ``running`` (not ``interrupted``) until it ends; a database that
    goes away mid-replay stops it with a ``ReplayError``."""
    this = asyncio.current_task()
    assert this is not None
    lost = asyncio.Event()

    def database_gone() -> None:
        lost.set()
        this.cancel(DATABASE_GONE)

    try:
        async with claim_session(log.store, replay_id, on_lost=database_gone):
            try:
                return await _run_segments(
                    log, replay_id, recording, progress, agent, agent_config, limits
                )
            finally:  # what the replay did is in its log, however it ended
                with contextlib.suppress(Exception):
                    await log.flush()
    except asyncio.CancelledError:
        if not lost.is_set():
            raise
        this.uncancel()
        raise ReplayError(
            f"{DATABASE_GONE} while replay {replay_id} ran; run the replay again"
        ) from None


def _recorded_overrides(recording: Recording) -> dict[str, Any] | None:
    """What the recorded session ran with beyond the defaults: its ``agent_config`` (a
    fork's), else the agent its ``session.created`` names if not the default one. An imported
    recording names the other framework's agent (``openhands``, ``swe-agent``): it is replayed
    against Chronicle's default agent, which is what comparing them means."""
    config = recording.config
    if config.agent_config:
        return dict(config.agent_config)
    if config.imported is not None:
        return None
    agent = config.agent
    return {"agent": agent} if agent and agent != CodeActAgent.name else None


def _llm_config(recording: Recording, agent_config: AgentConfig) -> LlmConfig:
    """The gateway settings the recording's calls were made with, and the overrides."""
    recorded = recording.config.llm or ModelSettings()
    model = recorded.model or recording.config.model
    first = recording.first_call
    if first is not None and not recording.redacted.at(first.seq, "/model"):
        model = first.payload.get("model") or model
    if not model:
        raise ValueError("neither its configuration nor a model call of it names a model")
    values: dict[str, Any] = {
        "model": model,
        "base_url": recorded.base_url,
        "temperature": recorded.given("temperature", 0.0),
        "max_output_tokens": recorded.max_output_tokens,
    }
    values.update(agent_config.llm_overrides())
    return LlmConfig(**values)


async def _agent(
    store: EventStore,
    recording: Recording,
    agent_config: AgentConfig,
    agent_type: type[CodeActAgent],
    gateway: ReplayGateway,
) -> CodeActAgent:
    """The agent as the recording configured it: its workspace path, and its MCP tools as the
    first recorded call offered them (their schemas are stored with the prompt)."""
    config = recording.config
    workspace = workspace_inside(config.runtime, str(config.workspace))
    mcp_tools: list[dict[str, Any]] = []
    servers = [str(s.get("name")) for s in config.mcp_servers or []]
    first = recording.first_call
    first_tools = first.payload.get("tools") if first is not None else None
    if first is not None and recording.redacted.at(first.seq, "/tools"):
        first_tools = None  # gone: the replay stops at the first call, which needs them
    if servers and first_tools:
        stored = await store.read_messages([first_tools])
        offered = (stored.get(first_tools) or {}).get("tools", [])
        mcp_tools = [t for t in offered if t.get("function", {}).get("name") not in BUILTIN_NAMES]
    index: dict[str, tuple[str, str]] = {}
    for tool in mcp_tools:
        name = str(tool["function"]["name"])
        server = next((s for s in servers if name.startswith(f"{s}__")), None)
        if server is not None:
            index[name] = (server, name.removeprefix(f"{server}__"))
    wanted = agent_config.tools
    if wanted is not None:
        unknown = sorted(set(wanted) - set(BUILTIN_NAMES) - set(index))
        if unknown:
            raise ReplayError(
                f"there is no tool {', '.join(unknown)}; the tools are: "
                f"{', '.join([*BUILTIN_NAMES, *index])}"
            )
        mcp_tools = [t for t in mcp_tools if t["function"]["name"] in wanted]
    return agent_type(
        gateway,
        workspace,
        mcp_tools=mcp_tools,
        mcp_index=index,
        system_prompt=agent_config.system_prompt,
        builtin_tools=wanted,
    )


def _stuck_detection(recording: Recording, agent_config: AgentConfig) -> bool:
    """As overridden, else as recorded (on when the recording does not say)."""
    if agent_config.stuck_detection is not None:
        return agent_config.stuck_detection
    return bool(recording.config.given("stuck_detection", True))


def _title(recording: Recording) -> str:
    """The recording's title, or its id where the title was redacted (not its placeholder)."""
    return str(recording.session_id) if recording.redacted.at(1, "/title") else recording.title


def _fed(recording: Recording, event: RecordedEvent) -> Event:
    """A user event of the recording as the replay records it (marked, with a fresh id; its
    sender left out when that was redacted, rather than copied as a placeholder)."""
    update: dict[str, Any] = {"event_id": new_event_id(), "replayed_from": event.seq}
    if recording.redacted.at(event.seq, "/user"):
        update["user"] = None
    return event.event().model_copy(update=update)


def _redacted_feed(progress: ReplayProgress, segment: Segment) -> Divergence | None:
    """A user event of ``segment`` the replay would feed that was redacted: the next model
    call would be asked from a placeholder (None: the feed is whole)."""
    found = progress.recording.redacted.among(event.seq for event in segment.feed)
    if found is None:
        return None
    step = progress.served + 1
    return redacted(step, found[0], found[1], f"model call {step} cannot be served")


async def _run_segments(
    store: AnsweringLog,
    replay_id: UUID,
    recording: Recording,
    progress: ReplayProgress,
    agent: CodeActAgent,
    agent_config: AgentConfig,
    limits: Limits,
) -> str | None:
    """Each go of the recording in turn; the replay's last outcome (None if it diverged in
    the middle of a go)."""
    outcome: str | None = None
    for segment in recording.segments:
        unfed = _redacted_feed(progress, segment)
        if unfed is not None:
            progress.stop(unfed)
            await store.append(
                replay_id,
                [AgentState(state="stopped", reason=f"the replay diverged: {unfed.summary}")],
            )
            return None
        if segment.feed:
            await store.append(replay_id, [_fed(recording, event) for event in segment.feed])
        controller = AgentController(
            store,
            replay_id,
            agent,
            limits=limits,
            stuck=StuckConfig(enabled=_stuck_detection(recording, agent_config)),
            stop_when_paused=True,
        )
        # Actions are answered as they are appended (``AnsweringLog``), not by workers.
        store.answer_with(
            RecordedAnswers(service, progress)
            for service in SERVICES
            if service != "mcp" or agent.mcp_index  # no MCP tools: no mcp.call to answer
        )
        try:
            try:
                outcome = await controller.run()
            except WorkerStopped as stopped:  # an action had no answer: as drive ends a run
                await store.append(
                    replay_id, [AgentState(state="error", reason=str(stopped), source="agent")]
                )
                outcome = "error"
                if progress.divergence is not None:  # what stopped it: nothing more to check
                    return outcome
            await progress.sync()
            await progress.check_consequences()
        except ReplayDiverged as diverged:
            await store.append(
                replay_id,
                [AgentState(state="stopped", reason=f"the replay diverged: {diverged}")],
            )
            return None
        if progress.divergence is not None:  # an action worker found it
            return outcome
        problem = _ending(progress, segment, outcome)
        if problem is not None:
            progress.stop(problem)
            return outcome
    return outcome


def _ending(progress: ReplayProgress, segment: Segment, outcome: str) -> Divergence | None:
    """A go of the controller ended: was it where and how the recording's did?"""
    recording = progress.recording
    reason = progress.last_state()[1]
    if progress.served < segment.calls:
        return MissingCall(
            step=progress.served + 1,
            recorded_seq=recording.call_seqs[progress.served],
            remaining=segment.calls - progress.served,
            outcome=outcome,
            summary=f"model call {progress.served + 1}: the agent stopped ({outcome}: "
            f"{reason}) where the recording went on with {segment.calls - progress.served} "
            "more model calls",
        )
    if outcome != segment.end_state and segment.end_seq is not None:
        parts = [p for p in recording.redacted.of(segment.end_seq) if p.path in ("", "/state")]
        if parts:
            return redacted(
                progress.served, segment.end_seq, parts,
                f"after model call {progress.served}, how the run ended cannot be compared",
            )  # fmt: skip
    if outcome != segment.end_state:
        return OutcomeDivergence(
            step=progress.served,
            recorded_state=segment.end_state,
            recorded_reason=segment.end_reason,
            new_state=outcome,
            new_reason=reason,
            summary=f"after model call {progress.served}: the run ended {outcome} ({reason}) "
            f"where the recording ended {segment.end_state} ({segment.end_reason})",
        )
    return None
