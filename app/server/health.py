"""``GET /health/live`` (the process answers) and ``GET /health/ready`` (it can serve).

Ready means: the database answers, its schema is at the revision this code was built for,
the projections the API reads (``session_state``) are live and not far behind, and some
worker has been seen within a lease's duration (else a session created now would wait). Each
check is reported by name with what it found; the status is 503 when any fails, so a load
balancer takes the process out of rotation and a person sees why.

"""

from __future__ import annotations

import asyncio

from litestar import Response, get
from litestar.openapi.datastructures import ResponseSpec
from pydantic import BaseModel

from app.projections import all_projections
from app.server.context import Context, ServerContext
from app.store.migrate import head_revision
from app.store.projection_status import projection_status
from app.store.readiness import schema_revision
from app.store.session_leases import present_workers

#: Projections further behind than this (seconds) make the API not ready.
MAX_PROJECTION_LAG = 30.0
CHECK_TIMEOUT = 5.0


class Check(BaseModel):
    name: str
    ok: bool
    detail: str


class Readiness(BaseModel):
    status: str
    checks: list[Check]


async def _workers(ctx: ServerContext) -> Check:
    within = ctx.settings.worker_lease_duration
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
        Check(
            name="migrations",
            ok=revision == head,
            detail=f"at {revision}, code expects {head}"
            + ("" if revision == head else ": run chronicle db migrate"),
        ),
    ]


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
    responses={503: ResponseSpec(Readiness, description="not ready: the failing checks say why")},
)
async def ready(ctx: Context) -> Response[Readiness]:
    """Database reachable, schema at head, projections live and current, workers present."""
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
    body = Readiness(status="ready" if ok else "not ready", checks=checks)
    return Response(body, status_code=200 if ok else 503)
