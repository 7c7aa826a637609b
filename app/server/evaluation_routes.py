"""Evaluation runs over the API: start one, list them, read one's progress and report, compare
two.

A run started here (``POST /api/evaluations``) belongs to the user who started it, and so does
its name: another user may start a run of the same name, and neither can tell (it is recorded
as ``NAME@OWNER-ID``, ``run_key``). Its trials are sessions the workers run, each scored when
it ends (``app.evaluation.api_runs``). A member reads only the runs they started; anyone
else's run, a run started with ``chronicle eval run`` (it has no owner) and a run that does
not exist all answer 404 alike. An admin reads every run: by its name where one run has it,
else by its key.
The report is ``chronicle eval report --json``'s, the comparison ``chronicle eval compare
--json``'s.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any, NamedTuple

import orjson
import yaml
from litestar import Request, get, post
from litestar.params import JSONBody, PathParameter, QueryParameter
from pydantic import BaseModel, ValidationError

from app.evaluation.api_runs import (
    ActiveSessionsCapError,
    EvaluationRequest,
    EvaluationRun,
    RunExistsError,
    RunPlan,
    RunRequestError,
    plan_run,
    progress_of,
    queued,
    run_key,
    start_run,
)
from app.evaluation.report import Comparison, Report, compare
from app.evaluation.reporting import ReportError, run_report
from app.evaluation.sql.evaluation_runs import (
    RunOwner,
    keys_named,
    list_runs,
    run_owner,
    run_recorded,
)
from app.evaluation.sql.run_tasks import recorded_tasks
from app.evaluation.suite import Suite
from app.llm.errors import CONFIGURATION_KINDS
from app.projections import SessionState, bring_up_to_date
from app.server.auth import principal_of
from app.server.context import Context
from app.server.creation import refuse_unknown_provider
from app.server.problems import (
    Conflict,
    NotFound,
    TooManyActiveSessions,
    Unprocessable,
    problem_responses,
)
from app.sessions.sql.users import Principal

MAX_PAGE = 200
RunName = Annotated[str, PathParameter(max_length=200)]
#: ``GET /api/evaluations/compare`` is that route, so no run may be named so.
RESERVED_NAMES = frozenset({"compare"})


class RunSuite(BaseModel):
    """The suite a run was started with, as the YAML ``POST /api/evaluations`` takes."""

    run: str
    suite: str


class EvaluationPage(BaseModel):
    runs: list[EvaluationRun]
    #: Pass it as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None


def not_found(run: str) -> NotFound:
    return NotFound(f"no evaluation run {run!r} (or it is not yours)")


class VisibleRun(NamedTuple):
    """A run the caller may read: what it is recorded as, and its owner and request (None:
    started from the command line)."""

    key: str
    owner: RunOwner | None


async def visible_run(ctx: Context, principal: Principal, run: str) -> VisibleRun:
    """The run ``principal`` means by ``run``; 404 unless they may read it (an admin reads
    every run, a member only theirs: their run of that name, or one before names were per
    owner, recorded under its bare name)."""
    if "\x00" in run:  # PostgreSQL text cannot hold it, so no run is named so
        raise not_found(run)
    if principal.is_admin:
        key = await admin_key(ctx, principal, run)
        return VisibleRun(key, await run_owner(ctx.store, key))
    for key in (run_key(run, principal.user_id), run):
        owner = await run_owner(ctx.store, key)
        if owner is not None and owner.owner == principal.user_id:
            return VisibleRun(key, owner)
    raise not_found(run)


async def admin_key(ctx: Context, principal: Principal, run: str) -> str:
    """The run an admin means: one recorded so (a key, or a command-line run's name), their
    own of that name, or the one API run of that name; 409 where several users chose it."""
    if "@" in run or await run_recorded(ctx.store, run):
        return run
    own = run_key(run, principal.user_id)
    keys = await keys_named(ctx.store, run)
    if own in keys:
        return own
    if len(keys) > 1:
        raise Conflict(
            f"{len(keys)} users have an evaluation run named {run!r}; ask for one by its key: "
            + ", ".join(keys)
        )
    return keys[0] if keys else run


def encode_cursor(created_at: datetime, name: str) -> str:
    raw = orjson.dumps([created_at.isoformat(), name])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, name = orjson.loads(raw)
        moment = datetime.fromisoformat(created)
        if moment.tzinfo is None or not isinstance(name, str) or "\x00" in name:
            raise ValueError("not a cursor")
        return moment, name
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        raise Unprocessable(
            "the cursor is not one this API returned; start again without it"
        ) from None


@post("/api/evaluations", status_code=202, responses=problem_responses(409, 422, 429))
async def start_evaluation(
    request: Request[Any, Any, Any], ctx: Context, data: JSONBody[EvaluationRequest]
) -> EvaluationRun:
    """Start an evaluation run: its trials are queued as sessions for the workers; follow it
    with ``GET /api/evaluations/{run}``."""
    principal = principal_of(request)
    if data.name in RESERVED_NAMES:
        raise Unprocessable(f"a run may not be named {data.name!r}; choose another name")
    try:
        plan = plan_run(ctx.settings, data, principal.user_id, principal.name)
        await refuse_unknown_provider(data.model)
        return await start_run(ctx.store, ctx.settings, plan)
    except RunRequestError as exc:
        problems = [problem.model_dump() for problem in exc.problems] or None
        raise Unprocessable(str(exc), errors=problems) from None
    except RunExistsError as exc:
        raise Conflict(str(exc)) from None
    except ActiveSessionsCapError as exc:
        raise TooManyActiveSessions(str(exc), headers={"Retry-After": "30"}) from None


@get("/api/evaluations", responses=problem_responses(422))
async def list_evaluations(
    request: Request[Any, Any, Any],
    ctx: Context,
    limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, QueryParameter(max_length=400)] = None,
) -> EvaluationPage:
    """Your evaluation runs (an admin's: all, those started from the command line too),
    newest first."""
    principal = principal_of(request)
    after = decode_cursor(cursor) if cursor else None
    await bring_up_to_date(ctx.store, SessionState(), ctx.settings.projections)
    rows = await list_runs(
        ctx.store,
        owner=None if principal.is_admin else principal.user_id,
        limit=limit + 1,
        after=after,
        stop_kinds=CONFIGURATION_KINDS,
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].created_at, rows[-1].name) if more else None
    return EvaluationPage(runs=[progress_of(row) for row in rows], next_cursor=next_cursor)


@get("/api/evaluations/compare", responses=problem_responses(404, 409))
async def compare_evaluations(
    request: Request[Any, Any, Any],
    ctx: Context,
    a: Annotated[str, QueryParameter(max_length=200, description="the baseline run")],
    b: Annotated[str, QueryParameter(max_length=200, description="the run compared with it")],
) -> Comparison:
    """Run B against run A (``chronicle eval compare A B --json``): the flip table, pass
    rates and their difference, cost and step deltas."""
    principal = principal_of(request)
    config = ctx.settings.projections
    reports = []
    for run in (a, b):
        key = (await visible_run(ctx, principal, run)).key
        try:
            report = await run_report(ctx.store, key, config)
        except ReportError:
            raise not_found(run) from None
        reports.append(report.model_copy(update={"run": run}))
    return compare(reports[0], reports[1])


@get("/api/evaluations/{run:str}", responses=problem_responses(404, 409))
async def evaluation_progress(
    request: Request[Any, Any, Any], ctx: Context, run: RunName
) -> EvaluationRun:
    """A run's progress: queued (no trial started yet), running, finished, or stopped (a
    trial ended on a configuration error: ``reason``), and its counts."""
    key, owner = await visible_run(ctx, principal_of(request), run)
    await bring_up_to_date(ctx.store, SessionState(), ctx.settings.projections)
    rows = await list_runs(ctx.store, owner=None, limit=1, name=key, stop_kinds=CONFIGURATION_KINDS)
    if rows:
        return progress_of(rows[0])
    if owner is not None and owner.request is not None:  # the projection has not seen it yet
        return queued(RunPlan.model_validate(owner.request), owner.started)
    raise not_found(run)


@get("/api/evaluations/{run:str}/report", responses=problem_responses(404, 409))
async def evaluation_report(request: Request[Any, Any, Any], ctx: Context, run: RunName) -> Report:
    """An evaluation run's report: pass rate with its interval, pass@k, per-task table."""
    key = (await visible_run(ctx, principal_of(request), run)).key
    try:
        report = await run_report(ctx.store, key, ctx.settings.projections)
    except ReportError:
        raise not_found(run) from None
    return report.model_copy(update={"run": run})


@get("/api/evaluations/{run:str}/suite", responses=problem_responses(404, 409))
async def evaluation_suite(request: Request[Any, Any, Any], ctx: Context, run: RunName) -> RunSuite:
    """The suite a run was started with, as YAML (to start another run from it: another
    model, more epochs): an API run's as requested; a run of ``chronicle eval run``, whose
    file this server does not keep, as its trials recorded their tasks."""
    key, owner = await visible_run(ctx, principal_of(request), run)
    if owner is not None and owner.request is not None:
        suite = RunPlan.model_validate(owner.request).suite
    else:
        await bring_up_to_date(ctx.store, SessionState(), ctx.settings.projections)
        tasks = await recorded_tasks(ctx.store, key)
        if not tasks:
            raise not_found(run)
        try:
            suite = Suite.model_validate({"name": run.split("@")[0], "tasks": tasks})
        except ValidationError:
            raise NotFound(f"run {run!r} recorded no task a suite can hold") from None
    text = yaml.safe_dump(
        suite.model_dump(mode="json", exclude_defaults=True), sort_keys=False, allow_unicode=True
    )
    return RunSuite(run=run, suite=text)


ROUTES = [
    start_evaluation,
    list_evaluations,
    compare_evaluations,
    evaluation_progress,
    evaluation_report,
    evaluation_suite,
]
