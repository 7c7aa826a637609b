"""``GET /health/live`` (the process answers) and ``GET /health/ready`` (it can serve).

Ready means: the database answers, takes writes (a small write that must reach its disk:
``app.store.readiness``; not ready while its disk is full), its schema is at the revision
this code was built for, the projections the API reads (``session_state``) are live and not
far behind, and some worker has been seen within a lease's duration (else a session created
now would wait). The status is 503 when any fails, so a load balancer takes the process out
of rotation.

Anyone may ask (a probe has no token), so the answer without credentials is only ``ready`` or
``not ready``: the checks' findings (the schema revision, how many workers and how busy, how
far behind the projections are) tell an outsider which version runs and when it is loaded.
An admin's token (or browser login) gets each check by name with what it found, so a person
sees why. The credentials are checked by the same authentication as every other route, so a
refused one counts as a failure of its address as it would anywhere.
"""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import Request, Response, get
from litestar.exceptions import HTTPException
from litestar.openapi.datastructures import ResponseSpec
from pydantic import BaseModel

from app.projections import all_projections
from app.projections.sql.projection_status import projection_status
from app.server.auth import SESSION_COOKIE, TokenAuthentication
from app.server.context import Context, ServerContext
from app.sessions.sql.session_leases import present_workers
from app.sessions.sql.users import Principal
from app.store import schema_revision, write_refusal
from app.store.migrate import head_revision

#: Projections further behind than this (seconds) make the API not ready.
MAX_PROJECTION_LAG = 30.0
CHECK_TIMEOUT = 5.0


class Check(BaseModel):
    name: str
    ok: bool
    detail: str


class Readiness(BaseModel):
    """What anyone is told: ``ready`` or ``not ready``."""

    status: str


class ReadinessChecks(Readiness):
    """What an admin is told: each check by name with what it found."""

    checks: list[Check]


async def _unused_app(scope: Any, receive: Any, send: Any) -> None:
    """The next app of the authentication middleware used here only for its check."""


async def _asked_by_admin(request: Request[Any, Any, Any]) -> bool:
    """Whether the request carries an admin's live credentials (never refused for them: the
    readiness answer stays the probe's whatever a caller sends)."""
    if not (request.headers.get("authorization") or request.cookies.get(SESSION_COOKIE)):
        return False
    try:
        found = await TokenAuthentication(_unused_app).authenticate_request(request)
    except HTTPException:  # unknown, revoked, malformed, or too many failures: no details
        return False
    return isinstance(found.user, Principal) and found.user.is_admin


async def _workers(ctx: ServerContext) -> Check:
    within = ctx.settings.worker.lease_duration
    async with asyncio.timeout(CHECK_TIMEOUT):
        found = await present_workers(ctx.store, seen_within=within)
    if not found:
        return Check(
            name="workers",
            ok=False,
            detail=f"no worker seen in the last {within:g} s: sessions wait until one runs "
            "(chronicle serve --role all or worker, or chronicle worker)",
        )
    capacity = sum(worker.capacity for worker in found)
    running = sum(worker.running for worker in found)
    return Check(
        name="workers",
        ok=True,
        detail=f"{len(found)} seen in the last {within:g} s, running {running} of {capacity}",
    )


@get("/health/live", sync_to_thread=False)
def live() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


async def _database(ctx: ServerContext) -> list[Check]:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            revision = await schema_revision(ctx.store)
    except Exception as exc:  # any failure is the answer: not ready, and why
        return [Check(name="database", ok=False, detail=f"unreachable: {type(exc).__name__}")]
    head = await asyncio.to_thread(head_revision)
    return [
        Check(name="database", ok=True, detail="reachable"),
        await _writes(ctx),
        Check(
            name="migrations",
            ok=revision == head,
            detail=f"at {revision}, code expects {head}"
            + ("" if revision == head else ": run chronicle db migrate"),
        ),
    ]


async def _writes(ctx: ServerContext) -> Check:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            refusal = await write_refusal(ctx.store)
    except Exception as exc:  # any failure is the answer: not ready, and why
        return Check(name="writes", ok=False, detail=f"cannot tell: {type(exc).__name__}")
    if refusal is not None:
        return Check(name="writes", ok=False, detail=f"refused: {refusal}")
    return Check(name="writes", ok=True, detail="taken")


async def _projections(ctx: ServerContext) -> list[Check]:
    names = [projection.name for projection in all_projections()]
    async with asyncio.timeout(CHECK_TIMEOUT):
        statuses = await projection_status(ctx.store, names)
    checks = []
    for status in statuses:
        ok = status.live and status.lag_seconds <= MAX_PROJECTION_LAG
        detail = (
            f"{'a runner is live' if status.live else 'no runner is live'}, "
            f"{status.behind} events behind ({status.lag_seconds:.1f} s)"
        )
        checks.append(Check(name=f"projection {status.name}", ok=ok, detail=detail))
    return checks


@get(
    "/health/ready",
    responses={
        503: ResponseSpec(Readiness, description="not ready (an admin sees the failing checks)")
    },
)
async def ready(request: Request[Any, Any, Any], ctx: Context) -> Response[Readiness]:
    """Database reachable, schema at head, projections live and current, workers present;
    with an admin's token, each check and what it found."""
    checks = await _database(ctx)
    if all(check.ok for check in checks):
        try:
            checks += await _projections(ctx)
        except Exception as exc:  # reported, never raised: this is the health answer
            checks.append(Check(name="projections", ok=False, detail=type(exc).__name__))
        try:
            checks.append(await _workers(ctx))
        except Exception as exc:
            checks.append(Check(name="workers", ok=False, detail=type(exc).__name__))
    ok = all(check.ok for check in checks)
    status = "ready" if ok else "not ready"
    body = (
        ReadinessChecks(status=status, checks=checks)
        if await _asked_by_admin(request)
        else Readiness(status=status)
    )
    return Response(body, status_code=200 if ok else 503)
