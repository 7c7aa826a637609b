"""Steering a session: post a message, pause, resume, stop.

Each is one event of source ``user`` carrying the user's name, appended to the log; the
agent's controller (in whichever worker runs the session) reads it there. A message and a
resume also ask for a run (``request_run``), since nobody may be running the session now:
it ended awaiting the user, or was paused; that run counts against the cap of working
sessions of the session's owner as creating one does (429 when it is full).
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from litestar import Request, post
from litestar.params import FromPath, JSONBody
from pydantic import BaseModel, Field

from app.events import AgentState, Event, Message
from app.server.access import ensure_visible
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import TooManyActiveSessions, problem_responses
from app.sessions.leases import record_and_request_run
from app.store.capped_runs import RunCapReached


class NewMessage(BaseModel):
    content: str = Field(min_length=1, max_length=100_000)


class Recorded(BaseModel):
    """The event the request recorded."""

    session_id: FromPath[UUID]
    seq: int
    kind: str
    #: A worker was asked to run the session.
    run_requested: bool


async def _record(ctx: Context, session_id: UUID, event: Event, run: str | None) -> Recorded:
    """Append the event; with ``run``, ask for the session's run too, which takes a place of
    the owner's cap of working sessions unless the session holds one (429 when none is left,
    and nothing is recorded)."""
    if run is None:
        recorded = await ctx.store.append(session_id, [event])
    else:
        try:
            recorded = await record_and_request_run(
                ctx.store, session_id, reason=run, cap=ctx.settings.server_max_active_sessions,
                record=lambda: ctx.store.append(session_id, [event]),
            )  # fmt: skip
        except RunCapReached as exc:
            raise TooManyActiveSessions(
                f"session {session_id} cannot run now: its owner has {exc.active} sessions "
                f"working already (the most one user may have); wait until one ends, or stop "
                "one, then send this again",
                headers={"Retry-After": "30"},
            ) from None
    return Recorded(
        session_id=session_id, seq=recorded[-1].seq, kind=event.kind, run_requested=run is not None
    )


@post(
    "/api/sessions/{session_id:uuid}/messages",
    status_code=202,
    responses=problem_responses(404, 409, 422),
)
async def post_message(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    data: JSONBody[NewMessage],
) -> Recorded:
    """Send the agent a message (an answer, a new instruction); the session runs on."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    message = Message(content=data.content, source="user", user=principal.name)
    return await _record(ctx, session_id, message, run="message")


async def _steer(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    state: Literal["paused", "running", "stopped"],
) -> Recorded:
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    event = AgentState(state=state, source="user", user=principal.name)
    return await _record(ctx, session_id, event, run="resume" if state == "running" else None)


@post(
    "/api/sessions/{session_id:uuid}/pause",
    status_code=202,
    responses=problem_responses(404, 409, 422),
)
async def pause(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> Recorded:
    """Pause the agent after its current step."""
    return await _steer(request, ctx, session_id, "paused")


@post(
    "/api/sessions/{session_id:uuid}/resume",
    status_code=202,
    responses=problem_responses(404, 409, 422),
)
async def resume(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> Recorded:
    """Let a paused or stopped session go on (a worker picks it up)."""
    return await _steer(request, ctx, session_id, "running")


@post(
    "/api/sessions/{session_id:uuid}/stop",
    status_code=202,
    responses=problem_responses(404, 409, 422),
)
async def stop(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> Recorded:
    """Stop the agent after its current step."""
    return await _steer(request, ctx, session_id, "stopped")


ROUTES = [post_message, pause, resume, stop]
