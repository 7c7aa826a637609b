"""Starting a replay or a fork of a session, and reading a replay's result.

Like creating a session, each records what the new session starts with and asks a worker to
run it (``app.sessions.worker_runs``); the API runs no agent, not even a replay (it needs no
model and no sandbox, but it runs the real agent and controller, a second of CPU for a long
recording that would hold up every request of this process, and nobody would finish it if
the process stopped). A replay's ``session.created`` is recorded here as ``chronicle
replay`` records it (``replay_of``, the mode, the agent configuration) after the overrides
were checked, so a bad request is a 422 now rather than a failed replay later. A fork's first
events are the source's, copied up to ``at_seq`` (``chronicle fork``'s ``record_fork``), with
the model and agent overrides asked for (checked as a replay's and a new session's are); the
worker restores the workspace, runs the copied actions again and goes on live. A fork of a
replay keeps the replay's overrides unless given others.

The new session belongs to the requesting user and counts against their cap of working
sessions; a source session they may not see is a 404.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal
from uuid import UUID

from litestar import Request, get, post
from litestar.params import FromPath, JSONBody
from pydantic import BaseModel, Field

from app.events import MAX_SEQ, Message
from app.replay import AgentConfig, ReplayError, ReplayMode, ReplayResult
from app.replay.engine import prepare_replay
from app.runtime.kinds import RuntimeKind
from app.server.access import ensure_visible
from app.server.auth import principal_of
from app.server.client_address import client_address
from app.server.context import Context
from app.server.creation import refuse_unknown_provider, reserve_within_cap
from app.server.problems import NotFound, Unprocessable, problem_responses
from app.server.text_fields import MESSAGE_TEXT, PROMPT_TEXT
from app.sessions import platform_audit
from app.sessions.fork import fork_workspace, forkable, record_fork
from app.sessions.leases import request_run
from app.sessions.runner import SessionError
from app.sessions.worker_runs import FORK_ON_DIVERGENCE, fork_id_of


class AgentOverrides(BaseModel):
    """What to change in the agent the recording ran (``chronicle replay``'s options)."""

    model_config = {"extra": "forbid"}

    system_prompt: Annotated[str, PROMPT_TEXT] | None = PROMPT_TEXT.field(
        default=None, description="replaces the agent's prompt"
    )
    tools: list[str] | None = Field(
        default=None, max_length=100, description="the tools offered, by name (built-in, MCP)"
    )
    max_iterations: int | None = Field(default=None, ge=1, le=100_000)
    model_params: dict[str, float | int] = Field(
        default_factory=dict, max_length=10, description="temperature, max_tokens"
    )
    agent: str = Field(default="codeact", min_length=1, max_length=100)
    stuck_detection: bool | None = None

    def agent_config(self) -> AgentConfig:
        return AgentConfig.model_validate(self.model_dump(exclude_defaults=True))


class NewReplay(BaseModel):
    mode: ReplayMode = "strict"
    #: ``stop`` only reports a divergence; ``fork`` also forks the session just before it
    #: and runs the fork live with the overrides (``chronicle replay --on-divergence fork``)
    on_divergence: Literal["stop", "fork"] = "stop"
    overrides: AgentOverrides = Field(default_factory=AgentOverrides)


class StartedReplay(BaseModel):
    #: The replay session: its events stream as any session's, its result is
    #: ``GET /api/sessions/{id}/replay-result``.
    id: UUID
    replay_of: UUID
    mode: ReplayMode
    user: str


class ReplayStatus(BaseModel):
    """``running`` until the worker wrote the result; ``failed`` (with ``error``) when the
    replay could not run; ``finished`` with ``result`` (``chronicle replay --json``'s)."""

    session_id: UUID
    replay_of: UUID
    state: Literal["running", "finished", "failed"]
    result: ReplayResult | None = None
    error: str | None = None
    #: With ``on_divergence: fork``, the fork made at the divergence (None until it exists).
    fork_id: UUID | None = None


class Limits(BaseModel):
    max_iterations: int | None = Field(default=None, ge=1, le=10_000)
    max_cost_usd: float | None = Field(default=None, ge=0)


class NewFork(BaseModel):
    at_seq: int = Field(ge=2, le=MAX_SEQ, description="the source's last event to copy")
    message: Annotated[str, MESSAGE_TEXT] | None = MESSAGE_TEXT.field(
        default=None, description="sent to the agent first"
    )
    runtime: RuntimeKind | None = None
    limits: Limits = Field(default_factory=Limits)
    model: str | None = Field(
        default=None, max_length=200, description="litellm model name; default: the source's"
    )
    #: On top of what the source ran with (a replay's overrides are kept otherwise).
    overrides: AgentOverrides = Field(default_factory=AgentOverrides)


class StartedFork(BaseModel):
    id: UUID
    forked_from: UUID
    forked_at: int
    user: str


@post(
    "/api/sessions/{session_id:uuid}/replays",
    status_code=202,
    responses=problem_responses(404, 422),
)
async def start_replay(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    data: JSONBody[NewReplay],
) -> StartedReplay:
    """Replay the session against today's agent with these overrides, in a worker: no model
    call, no sandbox; the result says where it diverged."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    replay_id = uuid.uuid4()
    try:
        config = data.overrides.agent_config()
        config.llm_overrides()
        created = await prepare_replay(
            ctx.store, session_id, config, mode=data.mode, replay_id=replay_id, user=principal.name
        )
    except (ReplayError, ValueError) as exc:
        raise Unprocessable(str(exc)) from None
    if data.on_divergence == FORK_ON_DIVERGENCE:
        created = created.model_copy(
            update={"config": created.config.with_keys(on_divergence=FORK_ON_DIVERGENCE)}
        )
    await reserve_within_cap(ctx.store, ctx.settings, principal, replay_id)
    await ctx.store.append(replay_id, [created], expected_seq=0)
    await request_run(ctx.store, replay_id, reason="replay")
    await platform_audit.session_started(
        ctx.store,
        platform_audit.api_actor(principal, client_address()),
        "replay",
        session_id=replay_id,
        source_session=session_id,
        principal=principal,
    )
    return StartedReplay(id=replay_id, replay_of=session_id, mode=data.mode, user=principal.name)


@get("/api/sessions/{session_id:uuid}/replay-result", responses=problem_responses(404))
async def replay_result(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> ReplayStatus:
    """A replay session's result, or that it is still running (or could not run)."""
    await ensure_visible(ctx, principal_of(request), session_id)
    events = await ctx.store.read(session_id)
    replay_of = events[0].payload.get("replay_of") if events else None
    if not replay_of:
        raise NotFound(f"session {session_id} is not a replay; its replays name it in replay_of")
    source = UUID(str(replay_of))
    for event in reversed(events):
        if event.kind == "replay.result":
            result = ReplayResult.model_validate({**event.payload, "session_id": session_id})
            fork_id = fork_id_of(session_id)
            forked = await ctx.store.last_seq(fork_id) > 0
            return ReplayStatus(
                session_id=session_id,
                replay_of=source,
                state="finished",
                result=result,
                fork_id=fork_id if forked else None,
            )
    failed = next(
        (
            e
            for e in reversed(events)
            if e.kind == "agent.state" and e.payload.get("state") == "error"
        ),
        None,
    )
    if failed is not None:
        return ReplayStatus(
            session_id=session_id,
            replay_of=source,
            state="failed",
            error=str(failed.payload.get("reason") or "the replay could not run"),
        )
    return ReplayStatus(session_id=session_id, replay_of=source, state="running")


@post(
    "/api/sessions/{session_id:uuid}/forks",
    status_code=202,
    responses=problem_responses(404, 422),
)
async def start_fork(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    data: JSONBody[NewFork],
) -> StartedFork:
    """A new session: the source's events up to ``at_seq`` copied, its workspace restored and
    the copied actions run again by a worker, then live with the model."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    agent_config = _fork_overrides(data.overrides)
    try:  # all checked before the fork counts against the cap: a refusal records nothing
        await forkable(ctx.store, session_id, data.at_seq, agent_config=agent_config)
    except SessionError as exc:
        raise Unprocessable(str(exc).replace("--at", "at_seq")) from None
    await refuse_unknown_provider(data.model)
    fork_id = uuid.uuid4()
    limits = data.limits.model_dump(exclude_none=True)
    await reserve_within_cap(ctx.store, ctx.settings, principal, fork_id)
    try:
        await record_fork(
            ctx.store, ctx.settings, session_id, data.at_seq,
            fork_id=fork_id, workspace=fork_workspace(ctx.settings, fork_id),
            runtime=data.runtime, limits=limits, agent_config=agent_config, model=data.model,
        )  # fmt: skip
    except SessionError as exc:  # the source changed meanwhile (it cannot shrink: rare)
        raise Unprocessable(str(exc)) from None
    if data.message is not None:
        await ctx.store.append(
            fork_id, [Message(content=data.message, source="user", user=principal.name)]
        )
    await request_run(ctx.store, fork_id, reason="fork")
    await platform_audit.session_started(
        ctx.store,
        platform_audit.api_actor(principal, client_address()),
        "fork",
        session_id=fork_id,
        source_session=session_id,
        principal=principal,
    )
    return StartedFork(
        id=fork_id, forked_from=session_id, forked_at=data.at_seq, user=principal.name
    )


def _fork_overrides(overrides: AgentOverrides) -> AgentConfig | None:
    """The overrides as the fork records them (None: none asked for); a model parameter no
    model takes is a 422, as for a replay."""
    if not overrides.model_fields_set:
        return None
    try:
        config = overrides.agent_config()
        config.llm_overrides()
    except ValueError as exc:
        raise Unprocessable(str(exc)) from None
    return config


ROUTES = [start_replay, replay_result, start_fork]
