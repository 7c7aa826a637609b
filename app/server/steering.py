"""Steering a session: post a message, pause, resume, stop.

Each is one event of source ``user`` carrying the user's name, appended to the log; the
agent's controller (in whichever worker runs the session) reads it there. A message and a
resume also ask for a run (``request_run``), since nobody may be running the session now:
it ended awaiting the user, or was paused; that run counts against the cap of working
sessions of the session's owner as creating one does (429 when it is full).

Pause, stop and resume apply only in some states (``app.agent.steering`` has the table): any
other is refused with 409 saying what the state is, and nothing is recorded, since a stop
after ``finished`` would rewrite what the session meant. The state is read from the log, and
the steering appended right after what was read (``expected_seq``), so a state that changes
in between is read again instead of steered blind.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from litestar import Request, post
from litestar.params import FromPath, JSONBody
from pydantic import BaseModel

from app.agent.steering import Steering, needs_run, phase_of, refusal
from app.events import AgentState, Event, Message
from app.server.access import ensure_visible
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import Conflict, TooManyActiveSessions, problem_responses
from app.server.text_fields import MESSAGE_TEXT
from app.sessions.leases import record_and_request_run, request_run
from app.sessions.sql.capped_runs import RunCapReached
from app.sessions.sql.steering_marks import steering_marks
from app.store import ConcurrencyError

#: The state a steering asks the agent for.
ASKED: dict[Steering, Literal["paused", "running", "stopped"]] = {
    "pause": "paused",
    "resume": "running",
    "stop": "stopped",
}
#: Reads of the state before a steering gives up on a session whose log moves too fast.
STEER_ATTEMPTS = 20


class NewMessage(BaseModel):
    content: Annotated[str, MESSAGE_TEXT] = MESSAGE_TEXT.field()


class Recorded(BaseModel):
    """The event the request recorded."""

    session_id: FromPath[UUID]
    seq: int
    kind: str
    #: A worker was asked to run the session.
    run_requested: bool


async def _record(
    ctx: Context,
    session_id: UUID,
    event: Event,
    run: str | None,
    *,
    expected_seq: int | None = None,
) -> Recorded:
    """Append the event (after ``expected_seq``, if given); with ``run``, ask for the
    session's run too, which takes a place of the owner's cap of working sessions unless the
    session holds one (429 when none is left, and nothing is recorded)."""
    if run is None:
        recorded = await ctx.store.append(session_id, [event], expected_seq=expected_seq)
    else:
        try:
            recorded = await record_and_request_run(
                ctx.store, session_id, reason=run, cap=ctx.settings.server.max_active_sessions,
                record=lambda: ctx.store.append(session_id, [event], expected_seq=expected_seq),
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
    steering: Steering,
) -> Recorded:
    """Record the steering if it applies to the session's state now (409 if not)."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    event = AgentState(state=ASKED[steering], source="user", user=principal.name)
    for _ in range(STEER_ATTEMPTS):
        marks = await steering_marks(ctx.store, session_id)
        phase = phase_of(marks)
        refused = refusal(session_id, steering, phase)
        if refused is not None:
            raise Conflict(refused)
        capped = steering == "resume"  # a resume runs the agent; a stop's run only records
        try:
            recorded = await _record(
                ctx, session_id, event, "resume" if capped else None, expected_seq=marks.last_seq
            )
        except ConcurrencyError:
            continue  # the log moved on: read the state again
        if not capped and needs_run(steering, phase):
            await request_run(ctx.store, session_id, reason=steering)
            recorded = recorded.model_copy(update={"run_requested": True})
        return recorded
    raise Conflict(
        f"session {session_id} changed {STEER_ATTEMPTS} times while its state was read; "
        f"send the {steering} again"
    )


@post(
    "/api/sessions/{session_id:uuid}/pause",
    status_code=202,
    responses=problem_responses(404, 409, 422),
)
async def pause(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> Recorded:
    """Pause the agent after its current step (409 unless it is running)."""
    return await _steer(request, ctx, session_id, "pause")


@post(
    "/api/sessions/{session_id:uuid}/resume",
    status_code=202,
    responses=problem_responses(404, 409, 422),
)
async def resume(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> Recorded:
    """Let a paused, stopped, interrupted or failed session go on (a worker picks it up; 409
    in any other state: a finished session is continued by a message)."""
    return await _steer(request, ctx, session_id, "resume")


@post(
    "/api/sessions/{session_id:uuid}/stop",
    status_code=202,
    responses=problem_responses(404, 409, 422),
)
async def stop(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> Recorded:
    """Stop the agent after its current step (409 unless it is running or paused)."""
    return await _steer(request, ctx, session_id, "stop")


ROUTES = [post_message, pause, resume, stop]
