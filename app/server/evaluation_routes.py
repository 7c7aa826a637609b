"""Reading an evaluation run's results: ``GET /api/evaluations/{run}/report``.

Evaluation runs are started from the command line (``chronicle eval run``): their sessions
have no owner, so only an admin reads their reports; anyone else gets 404, as for a run that
does not exist. The report is ``chronicle eval report --json``'s.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get
from litestar.params import PathParameter

from app.evaluation.report import Report
from app.evaluation.reporting import ReportError, run_report
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import NotFound, problem_responses


@get("/api/evaluations/{run:str}/report", responses=problem_responses(404))
async def evaluation_report(
    request: Request[Any, Any, Any],
    ctx: Context,
    run: Annotated[str, PathParameter(max_length=200)],
) -> Report:
    """An evaluation run's report: pass rate with its interval, pass@k, per-task table."""
    if not principal_of(request).is_admin:
        raise NotFound(f"no evaluation run {run!r} (or it is not yours)")
    try:
        return await run_report(ctx.store, run, ctx.settings.projections_config())
    except ReportError:
        raise NotFound(f"no evaluation run {run!r} (or it is not yours)") from None


ROUTES = [evaluation_report]
