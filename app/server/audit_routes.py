"""The platform audit log for admins: ``GET /api/audit`` (a page of it), ``/api/audit/verify``.

Members get 403: who was given a token, who signed in from where, which admin read whose
session is not a member's to read. The log is a stream of the events table
(app/events/platform_audit.py), so a page and a verification are those of any session.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from litestar import get
from litestar.connection import ASGIConnection
from litestar.exceptions import PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from litestar.params import QueryParameter
from pydantic import BaseModel

from app.events import MAX_SEQ
from app.events.platform_audit import PLATFORM_LOG_ID
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import Unprocessable, problem_responses
from app.sessions.sql.platform_audit import read_audit
from app.store import VerifyReport

MAX_PAGE = 1000


async def admins_only(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: the credentials are an admin's (403 for a member)."""
    if not principal_of(connection).is_admin:
        raise PermissionDeniedException("the platform audit log is for admins only")


class AuditRecord(BaseModel):
    seq: int
    created_at: datetime
    #: ``audit.login``, ``audit.token_created``, ... (docs/security.md lists them)
    kind: str
    #: who (``actor``), through what (``via``), from where (``address``), and the kind's fields
    payload: dict[str, Any]
    #: sha256 hex of the hash chain at this record.
    hash: str


class AuditPage(BaseModel):
    records: list[AuditRecord]
    #: Pass it as ``after_seq`` for the next page; None when this page reached the end.
    next_after_seq: int | None


@get("/api/audit", guards=[admins_only], responses=problem_responses(422))
async def audit_log(
    ctx: Context,
    since: Annotated[datetime | None, QueryParameter()] = None,
    after_seq: Annotated[int, QueryParameter(ge=0, le=MAX_SEQ)] = 0,
    limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 100,
) -> AuditPage:
    """A page of the platform's audit log, oldest first (admins only)."""
    if since is not None and since.tzinfo is None:
        raise Unprocessable("since needs a time zone, e.g. 2026-12-01T00:00:00Z")
    # One more than asked: whether this page reached the end (the log's own first event is
    # left out of the page, so ask past it too).
    found = await read_audit(ctx.store, since=since, after_seq=after_seq, limit=limit + 2)
    page = found[:limit]
    records = [
        AuditRecord(
            seq=e.seq, created_at=e.created_at, kind=e.kind, payload=e.payload, hash=e.hash.hex()
        )
        for e in page
    ]
    more = len(found) > limit
    return AuditPage(records=records, next_after_seq=page[-1].seq if more and page else None)


@get("/api/audit/verify", guards=[admins_only], responses=problem_responses())
async def verify_audit(ctx: Context) -> VerifyReport:
    """Check the audit log's hash chain (as ``chronicle verify`` does for any session)."""
    return await ctx.store.verify(PLATFORM_LOG_ID)


ROUTES = [audit_log, verify_audit]
