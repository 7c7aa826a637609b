"""Sessions: list (``session_state``, filtered, keyset-paged), get one, page its
events, verify its hash chain, export it (JSONL, as ``chronicle export`` writes it), open one
of its model calls (the whole prompt resolved from the stored messages)."""

from __future__ import annotations

import io
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from litestar import Request, Response, get
from litestar.params import FromPath, PathParameter, QueryParameter
from pydantic import BaseModel

from app.evaluation.trial_facts import with_trial
from app.events import MAX_SEQ
from app.events.id_prefix import NotAnIdPrefix
from app.events.id_prefix import id_prefix as prefix_digits
from app.events.prompts import PromptChainError, whole_prompts
from app.server.access import ensure_visible, not_found, owner_filter
from app.server.auth import principal_of
from app.server.context import Context
from app.server.cursors import BadCursorError, decode_cursor, encode_cursor
from app.server.event_search import (
    MAX_MATCHES,
    MAX_QUERY,
    EventMatch,
    EventQuery,
    KindGroup,
    SearchResult,
    match,
)
from app.server.problems import NotFound, Unprocessable, problem_responses
from app.sessions.sql.session_owners import (
    SessionFilters,
    list_visible_records,
    visible_session,
    visible_totals,
)
from app.sessions.sql.session_rows import ListedState, ListOrder
from app.sessions.summary import SessionSummary, summary_fields, with_fork_point
from app.store import EventStore, VerifyReport
from app.store.archive import export_sessions

MAX_PAGE = 200
MAX_EVENTS_PAGE = 1000


class ListTotals(BaseModel):
    """Every session the filters pass (not only the page's), counted and summed."""

    sessions: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    #: The known total; None when no session's cost is known.
    cost_usd: float | None
    #: Calls whose price is unknown: ``cost_usd`` is then a lower bound.
    unpriced_calls: int


class SessionPage(BaseModel):
    sessions: list[SessionSummary]
    #: Pass it as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None
    #: With ``totals=true``: the sums over every session the filters pass.
    totals: ListTotals | None = None


class EventView(BaseModel):
    seq: int
    event_id: UUID
    kind: str
    source: str
    cause: int | None
    payload: dict[str, Any]
    schema_version: int
    created_at: datetime
    #: sha256 hex of the hash chain at this event.
    hash: str


class EventPage(BaseModel):
    events: list[EventView]
    #: Pass it as ``after_seq`` for the next page; None when this page reached the end.
    next_after_seq: int | None
    last_seq: int


@get("/api/sessions", responses=problem_responses(422))
async def list_sessions(
    request: Request[Any, Any, Any],
    ctx: Context,
    status: Annotated[ListedState | None, QueryParameter(name="state")] = None,
    model: Annotated[str | None, QueryParameter(max_length=200)] = None,
    since: Annotated[datetime | None, QueryParameter()] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, QueryParameter(max_length=200)] = None,
    q: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=200,
            description="words of the title (the task's first line): each must begin a word "
            "of it, case-insensitive",
        ),
    ] = None,
    id_prefix: Annotated[
        str | None,
        QueryParameter(
            max_length=36,
            description="only sessions whose id begins with these hex digits (at least 4; "
            "dashes ignored): the 8 characters the page shows name a session",
        ),
    ] = None,
    label: Annotated[
        str | None,
        QueryParameter(max_length=100, description="an annotation's label, any case"),
    ] = None,
    tag: Annotated[
        str | None, QueryParameter(max_length=50, description="an annotation's tag, any case")
    ] = None,
    until: Annotated[
        datetime | None,
        QueryParameter(description="started before this time (with since: a range)"),
    ] = None,
    run: Annotated[
        str | None,
        QueryParameter(max_length=200, description="an evaluation run's trials (its key)"),
    ] = None,
    task: Annotated[
        str | None,
        QueryParameter(max_length=200, description="a task's trials (with run, of that run)"),
    ] = None,
    sort: Annotated[
        ListOrder,
        QueryParameter(
            description="newest (the default, paged by cursor), oldest, or the "
            "largest first by cost, tokens or steps"
        ),
    ] = "newest",
    totals: Annotated[
        bool, QueryParameter(description="also count and sum every session the filters pass")
    ] = False,
) -> SessionPage:
    """Your sessions (an admin's: all), newest first, from the session list projection."""
    try:
        after = decode_cursor(cursor) if cursor else None
    except BadCursorError as exc:
        raise Unprocessable(str(exc)) from None
    texts = (
        ("q", q),
        ("model", model),
        ("label", label),
        ("tag", tag),
        ("run", run),
        ("task", task),
    )
    for name, text in texts:
        if text is not None and "\x00" in text:  # PostgreSQL text cannot hold it
            raise Unprocessable(f"{name} cannot contain a NUL character")
    if after is not None and sort != "newest":
        raise Unprocessable("a cursor pages on the newest-first list only: leave out sort")
    digits = None
    if id_prefix is not None:
        try:
            digits = prefix_digits(id_prefix)
        except NotAnIdPrefix as exc:
            raise Unprocessable(str(exc)) from None
    for name, moment in (("since", since), ("until", until)):
        if moment is not None and moment.tzinfo is None:
            raise Unprocessable(f"{name} needs a time zone, e.g. 2026-12-01T00:00:00Z")
    filters = SessionFilters(
        state=status, model=model, since=since, until=until, words=q, id_prefix=digits,
        label=label, tag=tag, run=run, task=task,
    )  # fmt: skip
    owner = owner_filter(principal_of(request))
    rows = await list_visible_records(
        ctx.store, owner=owner, limit=limit + 1, after=after, sort=sort, filters=filters
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = (
        encode_cursor(rows[-1]["created_at"], rows[-1]["session_id"])
        if more and sort == "newest"
        else None
    )
    summed = None
    if totals:
        found = await visible_totals(ctx.store, owner=owner, filters=filters)
        cost = found["cost_usd"]
        summed = {**found, "cost_usd": float(cost) if cost is not None else None}
    # one validation for the page (not a model per row, then one per summary): see summary_fields
    return SessionPage.model_validate(
        {
            "sessions": [summary_fields(row) for row in rows],
            "next_cursor": next_cursor,
            "totals": summed,
        }
    )


@get("/api/sessions/{session_id:uuid}", responses=problem_responses(404))
async def get_session(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> SessionSummary:
    """One session's summary (404 if it is not yours, or not listed yet: retry shortly)."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    row = await visible_session(ctx.store, session_id, owner=owner_filter(principal))
    if row is None:
        raise not_found(session_id)
    return await with_fork_point(ctx.store, await with_trial(ctx.store, SessionSummary.of(row)))


@get("/api/sessions/{session_id:uuid}/events", responses=problem_responses(404))
async def events(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    after_seq: Annotated[int, QueryParameter(ge=0, le=MAX_SEQ)] = 0,
    limit: Annotated[int, QueryParameter(ge=1, le=MAX_EVENTS_PAGE)] = 100,
) -> EventPage:
    """A page of the session's events after ``after_seq``, in order."""
    await ensure_visible(ctx, principal_of(request), session_id)
    found = await ctx.store.read(session_id, after_seq=after_seq, limit=limit)
    last = await ctx.store.last_seq(session_id)
    views = [
        EventView(
            seq=e.seq,
            event_id=e.event_id,
            kind=e.kind,
            source=e.source,
            cause=e.cause,
            payload=e.payload,
            schema_version=e.schema_version,
            created_at=e.created_at,
            hash=e.hash.hex(),
        )
        for e in found
    ]
    reached = views[-1].seq if views else after_seq
    return EventPage(
        events=views, next_after_seq=reached if reached < last else None, last_seq=last
    )


#: Events read at a time by a search (a 10,000-event session is read in five).
SEARCH_PAGE = 2000


@get("/api/sessions/{session_id:uuid}/search", responses=problem_responses(404))
async def search(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    text: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=MAX_QUERY,
            description="found in any text of an event (case-insensitive), never in field names",
        ),
    ] = None,
    kind: Annotated[
        KindGroup | None,
        QueryParameter(
            description="messages, commands, files, model_calls, tools, thoughts, "
            "or errors (failed commands, model calls and tools, errors, a failed sandbox)"
        ),
    ] = None,
) -> SearchResult:
    """The session's events matching every part given, oldest first: each with its seq (the
    page opens it at ``#/sessions/ID/events/SEQ``) and the text around the match. Payloads are
    searched whole, as the events route returns them (large outputs included)."""
    await ensure_visible(ctx, principal_of(request), session_id)
    query = EventQuery(text=text, kind=kind)
    last = await ctx.store.last_seq(session_id)
    matches: list[EventMatch] = []
    total, after = 0, 0
    while after < last:
        page = await ctx.store.read(
            session_id, after_seq=after, limit=SEARCH_PAGE, leave_out=("prompt",)
        )
        if not page:
            break
        for event in page:
            found = match(event.kind, event.payload, query)
            if found is None:
                continue
            total += 1
            if len(matches) < MAX_MATCHES:
                matches.append(
                    EventMatch(
                        seq=event.seq,
                        kind=event.kind,
                        created_at=event.created_at,
                        snippet=found.snippet,
                        error=found.error,
                    )
                )
        after = page[-1].seq
    return SearchResult(matches=matches, total=total, last_seq=last)


@get("/api/sessions/{session_id:uuid}/verify", responses=problem_responses(404))
async def verify(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> VerifyReport:
    """Check the session's hash chain, its prompt messages and blobs (as chronicle verify)."""
    await ensure_visible(ctx, principal_of(request), session_id)
    return await ctx.store.verify(session_id)


@get(
    "/api/sessions/{session_id:uuid}/export",
    media_type="application/x-ndjson",
    responses=problem_responses(404),
)
async def export(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> Response[bytes]:
    """The session as an export file (JSONL, what chronicle export writes; chronicle import
    reads it)."""
    await ensure_visible(ctx, principal_of(request), session_id)
    out = io.StringIO()
    await export_sessions(ctx.store, [session_id], out)
    return Response(
        content=out.getvalue().encode("utf-8", "surrogatepass"),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{session_id}.jsonl"'},
    )


class ModelCallView(BaseModel):
    """One ``llm.call`` as the model saw it: the whole prompt (resolved from the stored
    messages, not the call's delta), the tools offered, and what came back."""

    seq: int
    created_at: datetime
    model: str
    params: dict[str, Any]
    fingerprint: str
    #: The whole prompt, in order, each message as stored (what ``chronicle export`` writes).
    messages: list[dict[str, Any]]
    #: sha256 of each message of ``messages``.
    message_hashes: list[str]
    #: The tool list offered (None: no tools).
    tools: list[dict[str, Any]] | None
    tool_calling: str
    #: The reply as recorded: content, tool calls, finish reason.
    response: dict[str, Any]
    usage: dict[str, Any]
    cost_usd: float | None
    latency_ms: float | None
    #: Tries it took (1: no retry).
    attempts: int
    error: str | None
    error_kind: str | None


@get(
    "/api/sessions/{session_id:uuid}/model-calls/{seq:int}",
    responses=problem_responses(404, 422),
)
async def model_call(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    seq: Annotated[int, PathParameter(ge=1, le=MAX_SEQ)],
) -> ModelCallView:
    """The model call at ``seq``: its whole prompt, tools, response, tokens, cost, latency."""
    await ensure_visible(ctx, principal_of(request), session_id)
    return await read_model_call(ctx.store, session_id, seq)


async def read_model_call(store: EventStore, session_id: UUID, seq: int) -> ModelCallView:
    """The ``llm.call`` at ``seq`` with its whole prompt resolved (404, 422 as problems)."""
    upto = await store.read(session_id, limit=seq)
    if not upto or upto[-1].seq != seq or upto[-1].kind != "llm.call":
        raise NotFound(f"session {session_id} has no model call at seq {seq}")
    try:
        prompt = list(whole_prompts(e.payload for e in upto if e.kind == "llm.call"))[-1]
    except PromptChainError as exc:
        raise Unprocessable(
            f"the prompt of the call at seq {seq} cannot be resolved: {exc}"
        ) from None
    call = upto[-1].payload
    tools_hash = call.get("tools")
    stored = await store.read_messages([*prompt, *([tools_hash] if tools_hash else [])])
    missing = [key for key in prompt if key not in stored]
    if missing:
        raise Unprocessable(
            f"{len(missing)} prompt message(s) of this call are missing from the database; "
            f"run chronicle verify {session_id}"
        )
    tools = stored.get(tools_hash, {}).get("tools") if tools_hash else None
    return ModelCallView(
        seq=seq,
        created_at=upto[-1].created_at,
        model=str(call.get("model", "")),
        params=call.get("params") or {},
        fingerprint=str(call.get("fingerprint", "")),
        messages=[stored[key] for key in prompt],
        message_hashes=prompt,
        tools=tools,
        tool_calling=str(call.get("tool_calling", "native")),
        response=call.get("response") or {},
        usage=call.get("usage") or {},
        cost_usd=call.get("cost_usd"),
        latency_ms=call.get("latency_ms"),
        attempts=int(call.get("attempts", 1)),
        error=call.get("error"),
        error_kind=call.get("error_kind"),
    )


ROUTES = [list_sessions, get_session, events, search, verify, export, model_call]
