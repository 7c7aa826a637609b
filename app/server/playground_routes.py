"""The playground's routes: send one recorded model call again with an edit, and list the runs
made from a session's calls (``app.external.playground`` records them).

Only someone who may read the original session (its owner, or an admin) may run its call (404
otherwise, as for every session route), and they own the new session. The request is checked
before anything is recorded (422: a message, a tool or a parameter that is not one, a model
no provider answers to); from then on a model's failure (a 401 upstream, a timeout, a reply
with no choices, a gateway limit) is recorded as a failed ``llm.call`` and answered 201 with
``error`` set, so the page shows it beside the original response.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from litestar import Request, get, post
from litestar.params import FromPath, JSONBody, PathParameter, QueryParameter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.events import MAX_SEQ, LlmResponse, LlmUsage
from app.events.session_config import CallLink
from app.external.playground import (
    CallRequest,
    PlaygroundRefused,
    editable_params,
    run_edited_call,
)
from app.external.sql.playground_runs import playground_runs
from app.server.access import ensure_visible, owner_filter
from app.server.auth import principal_of
from app.server.context import Context
from app.server.gateway_routes import gateway_of
from app.server.problems import Unprocessable, problem_responses
from app.server.session_routes import read_model_call

#: Most runs listed for one session.
MAX_RUNS = 200


class PromptMessage(BaseModel):
    """One prompt message as OpenAI's chat completions take it; its other keys (``tool_calls``,
    ``tool_call_id``, ``name``) are kept as given."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None


class ToolFunction(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class OfferedTool(BaseModel):
    """A tool offered to the model, as OpenAI's function tools are written."""

    model_config = ConfigDict(extra="allow")

    type: Literal["function"]
    function: ToolFunction


class PlaygroundRequest(BaseModel):
    """The call's request as the user edited it; a part left out (or null) is the call's own,
    so ``{}`` sends the call again as recorded."""

    model_config = ConfigDict(extra="forbid")

    messages: list[PromptMessage] | None = Field(
        default=None, min_length=1, max_length=10_000, description="the whole prompt, in order"
    )
    tools: list[OfferedTool] | None = Field(
        default=None, max_length=1000, description="the tools offered ([]: none)"
    )
    params: dict[str, Any] | None = Field(
        default=None,
        max_length=100,
        description="temperature, max_tokens and any other chat-completion parameter",
    )
    model: str | None = Field(
        default=None, min_length=1, max_length=200, description="a litellm model name"
    )


class PlaygroundResult(BaseModel):
    """The run, recorded in a session of its own: its call's response, tokens, cost, latency."""

    session_id: UUID
    #: the seq of the run's ``llm.call`` in its session
    seq: int
    created_at: datetime
    from_call: CallLink
    model: str
    response: LlmResponse
    usage: LlmUsage
    cost_usd: float | None
    latency_ms: float | None
    attempts: int
    #: why the call failed (also recorded in the call), None when the model answered
    error: str | None
    error_kind: str | None


class PlaygroundRunView(BaseModel):
    """One run listed under the session whose call it sent again."""

    session_id: UUID
    created_at: datetime
    title: str | None
    from_call: CallLink
    model: str | None
    error: str | None
    error_kind: str | None
    cost_usd: float | None


class PlaygroundRuns(BaseModel):
    runs: list[PlaygroundRunView]


def edited_request(original: CallRequest, edit: PlaygroundRequest) -> CallRequest:
    """The request to send: the edit's parts, the call's own where it gives none."""
    messages, tools = original.messages, original.tools
    if edit.messages is not None:
        messages = [m.model_dump(mode="json", exclude_unset=True) for m in edit.messages]
    if edit.tools is not None:
        tools = [t.model_dump(mode="json", exclude_unset=True) for t in edit.tools]
    return CallRequest(
        model=edit.model or original.model,
        messages=messages,
        tools=tools,
        params=original.params if edit.params is None else edit.params,
    )


@post(
    "/api/sessions/{session_id:uuid}/model-calls/{seq:int}/playground",
    status_code=201,
    responses=problem_responses(404, 422),
)
async def run_in_playground(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    seq: Annotated[int, PathParameter(ge=1, le=MAX_SEQ)],
    data: JSONBody[PlaygroundRequest],
) -> PlaygroundResult:
    """Send the model call at ``seq`` again with the user's edit, recorded as a session of its
    own linked to it (``from_call``); a model's failure is recorded and answered in
    ``error``."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    call = await read_model_call(ctx.store, session_id, seq)
    original = CallRequest(
        model=call.model,
        messages=call.messages,
        tools=call.tools or [],
        params=editable_params(call.params),
    )
    edited = edited_request(original, data)
    try:
        run = await run_edited_call(
            ctx.store,
            gateway_of(request.app).calls,
            principal,
            session_id,
            seq,
            original,
            edited,
        )
    except PlaygroundRefused as exc:
        raise Unprocessable(str(exc)) from None
    payload = run.call.payload
    return PlaygroundResult(
        session_id=run.session_id,
        seq=run.call.seq,
        created_at=run.call.created_at,
        from_call=CallLink(session=str(session_id), seq=seq, changes=run.changes),
        model=str(payload.get("model", "")),
        response=LlmResponse.model_validate(payload.get("response") or {}),
        usage=LlmUsage.model_validate(payload.get("usage") or {}),
        cost_usd=payload.get("cost_usd"),
        latency_ms=payload.get("latency_ms"),
        attempts=int(payload.get("attempts", 1)),
        error=payload.get("error") or run.error,
        error_kind=payload.get("error_kind"),
    )


@get("/api/sessions/{session_id:uuid}/playground-runs", responses=problem_responses(404))
async def list_playground_runs(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    seq: Annotated[int | None, QueryParameter(ge=1, le=MAX_SEQ)] = None,
) -> PlaygroundRuns:
    """The playground runs made from this session's model calls (of the call at ``seq``
    only, when given) that you may read, newest first."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    rows = await playground_runs(
        ctx.store, session_id, seq=seq, owner=owner_filter(principal), limit=MAX_RUNS
    )
    runs = []
    for row in rows:
        try:
            link = CallLink.model_validate(row["from_call"])
        except ValidationError:  # not written by the playground: not one of its runs
            continue
        cost = row["cost_usd"]
        runs.append(
            PlaygroundRunView(
                session_id=row["session_id"],
                created_at=row["created_at"],
                title=row["title"],
                from_call=link,
                model=row["model"],
                error=row["error"],
                error_kind=row["error_kind"],
                cost_usd=cost
                if isinstance(cost, int | float) and not isinstance(cost, bool)
                else None,
            )
        )
    return PlaygroundRuns(runs=runs)


ROUTES = [run_in_playground, list_playground_runs]
