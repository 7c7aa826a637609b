"""Redaction through the API: ``POST /api/sessions/{id}/redactions``, an admin's only
(docs/erasure.md).

The part at ``path`` (a JSON Pointer; empty: the whole payload) of the session's event ``seq``
is replaced by its marker and a ``redaction`` event records it, with the signed-in admin as
its ``user``; the blobs and prompt messages the part named go too, from every session that
names them, each with a record (all returned, this one first). The owner, a member, gets 403
(an owner may not erase their own session's record); anyone else's session does not exist
for them (404, as on every session route).

The copies Chronicle wrote to this machine's disk (exports and archives in the data
directory's ledger) take the same markers after the response is sent, as ``chronicle redact``
does; what became of each is logged (docs/erasure.md, "Exports on disk").
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from litestar import Request, Response, post
from litestar.background_tasks import BackgroundTask
from litestar.exceptions import PermissionDeniedException
from litestar.params import FromPath, JSONBody
from pydantic import BaseModel, Field

from app.config import Settings
from app.events import MAX_SEQ
from app.events.commitment import RedactionPathError
from app.events.redaction import MAX_PATH, MAX_REASON
from app.server.access import ensure_visible
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import Unprocessable, problem_responses
from app.store import (
    EventStore,
    RecordedEvent,
    RedactedPart,
    RedactionRefused,
    existing_anchor_key,
    remove_parts_on_disk,
    texts_of_part,
)

log = logging.getLogger(__name__)


class NewRedaction(BaseModel):
    """What to remove, and why."""

    seq: int = Field(ge=1, le=MAX_SEQ, description="the event")
    path: str = Field(
        default="",
        max_length=MAX_PATH,
        description="a JSON Pointer into its payload (/output, /response/content); "
        "empty: the whole payload",
    )
    reason: str = Field(min_length=1, max_length=MAX_REASON, description="why, in words")


class RedactionView(BaseModel):
    """One ``redaction`` event recorded."""

    session_id: UUID
    #: the record's own seq
    seq: int
    created_at: datetime
    target_seq: int
    path: str
    #: the removed part's digest in the payload's tree commitment (sha256 hex)
    removed: str
    user: str | None
    reason: str


class RedactionList(BaseModel):
    redactions: list[RedactionView]


@post(
    "/api/sessions/{session_id:uuid}/redactions",
    status_code=201,
    responses=problem_responses(403, 404, 422),
)
async def redact(
    request: Request[Any, Any, Any],
    ctx: Context,
    session_id: FromPath[UUID],
    data: JSONBody[NewRedaction],
) -> Response[RedactionList]:
    """Remove a part of one of the session's events, keeping the proof of the rest (admins)."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)  # first: another's session is a 404
    if not principal.is_admin:
        raise PermissionDeniedException("only an admin may redact")
    if not data.reason.strip():
        raise Unprocessable("the reason must say why")
    if data.seq > await ctx.store.last_seq(session_id):
        raise Unprocessable(f"session {session_id} has no event {data.seq}")
    try:
        # first: once it is redacted, the log holds only its digest
        texts = await texts_of_part(ctx.store, session_id, data.seq, data.path)
        records = await ctx.store.redact(
            session_id, data.seq, data.path, reason=data.reason, user=principal.name
        )
    except (RedactionPathError, RedactionRefused) as exc:
        raise Unprocessable(str(exc)) from None
    listed = RedactionList(
        redactions=[
            RedactionView(
                session_id=record.session_id,
                seq=record.seq,
                created_at=record.created_at,
                target_seq=int(record.payload["target_seq"]),
                path=str(record.payload["path"]),
                removed=str(record.payload["removed"]),
                user=record.payload.get("user"),
                reason=str(record.payload["reason"]),
            )
            for record in records
        ]
    )
    rewrite = BackgroundTask(_off_the_disk, ctx.store, ctx.settings, records, texts)
    return Response(listed, status_code=201, background=rewrite)


async def _off_the_disk(
    store: EventStore, settings: Settings, records: Sequence[RecordedEvent], texts: Any
) -> None:
    """The same markers in the copies on this machine's disk; each change logged."""
    try:
        report = await remove_parts_on_disk(
            store,
            [RedactedPart.of(record) for record in records],
            texts,
            data_dir=settings.data_dir,
            key=existing_anchor_key(settings.anchor_key_file, settings.data_dir),
        )
    except Exception:  # the redaction is done and answered: a failure here is only logged
        log.exception("the copies on disk of a redaction could not be rewritten")
        return
    for change in report.changes:
        log.info("redaction: on disk: %s", change)
    for left in report.left:
        log.warning("redaction: a copy on disk still holds the redacted part: %s", left)


ROUTES = [redact]
