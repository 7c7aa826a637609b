"""Annotations and the review queue: ``POST`` / ``GET /api/sessions/{id}/annotations`` and
``GET /api/review``.

An annotation is an event of the session (app/events/annotation.py) with the signed-in user
as its ``user``, appended like a message but handed to nobody: no run is asked for, so the
agent is not woken, and a finished session can be annotated as any other. Whoever may see a
session may annotate it (its owner, any admin); for anyone else it does not exist (404, as
on every session route). It is not also written to the platform audit trail: as for a
message or a pause, the session's own chain records who wrote it and when, and an admin's
visit to another user's session is recorded there already (``ensure_visible``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from litestar import Request, get, post
from litestar.params import FromPath, JSONBody, QueryParameter
from pydantic import BaseModel, Field

from app.events import MAX_SEQ, InvalidEventError, parse_event
from app.events.annotation import MAX_COMMENT, MAX_LABEL, MAX_TAG, MAX_TAGS
from app.server.access import ensure_visible, owner_filter
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import Unprocessable, problem_responses
from app.server.text_fields import TextLength
from app.sessions.sql.annotations import session_annotations
from app.sessions.sql.review_queue import unreviewed
from app.sessions.sql.session_rows import ListedState
from app.sessions.summary import SessionSummary, summary_fields

#: The most annotations one read returns (the page shows every one of a session).
MAX_ANNOTATIONS = 5000
#: Sessions of the review queue one read returns, and the most it counts.
QUEUE_PAGE = 50
QUEUE_COUNT_CAP = 10_000

COMMENT_TEXT = TextLength(0, MAX_COMMENT)


class NewAnnotation(BaseModel):
    """What a person says about the session (``target_seq`` None) or one of its events."""

    label: str = Field(
        min_length=1,
        max_length=MAX_LABEL,
        description='free text; the page suggests "unsafe command", "wrong answer", "good", '
        '"reviewed", ...',
    )
    comment: Annotated[str, COMMENT_TEXT] = COMMENT_TEXT.field(default="")
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    target_seq: int | None = Field(default=None, ge=1, le=MAX_SEQ)


class AnnotationView(BaseModel):
    seq: int
    created_at: datetime
    #: who wrote it
    user: str | None
    label: str
    comment: str
    tags: list[str]
    #: the event it is about; None: the whole session
    target_seq: int | None
    #: set on a fork's copy of its source's annotation: the seq it had there
    copied_from: int | None = None


class AnnotationList(BaseModel):
    annotations: list[AnnotationView]


class ReviewQueue(BaseModel):
    #: sessions matching the filter that nobody has reviewed yet (at most ``QUEUE_COUNT_CAP``)
    remaining: int
    #: the first of them, newest first
    sessions: list[SessionSummary]


def _view(seq: int, created_at: datetime, payload: dict[str, Any]) -> AnnotationView:
    return AnnotationView(
        seq=seq,
        created_at=created_at,
        user=payload.get("user"),
        label=str(payload.get("label", "")),
        comment=str(payload.get("comment") or ""),
        tags=[str(tag) for tag in payload.get("tags") or []],
        target_seq=payload.get("target_seq"),
        copied_from=payload.get("replayed_from"),
    )


@post(
    "/api/sessions/{session_id:uuid}/annotations",
    status_code=201,
    responses=problem_responses(404, 422),
)
async def annotate(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    data: JSONBody[NewAnnotation],
) -> AnnotationView:
    """Label the session or one of its events (its owner or an admin; a finished session too).
    Recorded in the session's log; the agent does not react to it."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    if data.target_seq is not None and data.target_seq > await ctx.store.last_seq(session_id):
        raise Unprocessable(f"session {session_id} has no event {data.target_seq}")
    try:  # the event's own rules: a blank label, a control character, ...
        event = parse_event({"kind": "annotation", **data.model_dump(), "user": principal.name})
    except InvalidEventError as exc:
        raise Unprocessable(str(exc)) from None
    [recorded] = await ctx.store.append(session_id, [event])
    return _view(recorded.seq, recorded.created_at, event.payload())


@get("/api/sessions/{session_id:uuid}/annotations", responses=problem_responses(404))
async def list_annotations(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> AnnotationList:
    """The session's annotations, oldest first (read without its other events)."""
    await ensure_visible(ctx, principal_of(request), session_id)
    found = await session_annotations(ctx.store, session_id, MAX_ANNOTATIONS)
    return AnnotationList(annotations=[_view(*row) for row in found])


@get("/api/review", responses=problem_responses(422))
async def review_queue(
    request: Request[Any, Any, Any],
    ctx: Context,
    status: Annotated[ListedState | None, QueryParameter(name="state")] = None,
    model: Annotated[str | None, QueryParameter(max_length=200)] = None,
    label: Annotated[str | None, QueryParameter(max_length=MAX_LABEL)] = None,
    tag: Annotated[str | None, QueryParameter(max_length=MAX_TAG)] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=QUEUE_PAGE)] = QUEUE_PAGE,
) -> ReviewQueue:
    """Your sessions (an admin's: all) matching the filters that nobody has reviewed yet: no
    ``reviewed`` annotation on the whole session (docs/web.md), newest first."""
    for name, text in (("model", model), ("label", label), ("tag", tag)):
        if text is not None and "\x00" in text:  # PostgreSQL text cannot hold it
            raise Unprocessable(f"{name} cannot contain a NUL character")
    rows, remaining = await unreviewed(
        ctx.store,
        owner=owner_filter(principal_of(request)),
        limit=limit,
        cap=QUEUE_COUNT_CAP,
        state=status,
        model=model,
        label=label,
        tag=tag,
    )
    return ReviewQueue.model_validate(
        {"remaining": remaining, "sessions": [summary_fields(row) for row in rows]}
    )


ROUTES = [annotate, list_annotations, review_queue]
