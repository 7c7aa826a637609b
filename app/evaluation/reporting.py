"""Reading a run's report from the store: brings ``session_state`` up to date, then builds
the report from the run's sessions and the scores that count on them, and the run's trials
whose sessions were erased (counted apart)."""

from __future__ import annotations

from app.errors import ChronicleError
from app.evaluation.report import Report, build_report
from app.evaluation.sql.erased_trials import erased_trials
from app.evaluation.sql.evaluation_results import evaluation_run_results
from app.evaluation.sql.evaluation_runs import keys_named
from app.projections import ProjectionsConfig, SessionState, bring_up_to_date
from app.store import EventStore


class ReportError(ChronicleError, LookupError):
    """No report can be made; the message says why and what to do."""


async def run_report(
    store: EventStore, run: str, config: ProjectionsConfig | None = None
) -> Report:
    """The report of the evaluation run named ``run``: recorded so, or else the one run a
    user started through the API under that name (recorded as ``NAME@OWNER-ID``)."""
    await bring_up_to_date(store, SessionState(), config)
    key = run
    found = await evaluation_run_results(store, run)
    if found is None:
        keys = await keys_named(store, run)
        if len(keys) > 1:
            raise ReportError(
                f"{len(keys)} users have an evaluation run named {run!r}; name one by its "
                "key: " + ", ".join(keys)
            )
        if keys:
            key = keys[0]
            found = await evaluation_run_results(store, key)
    erased = await erased_trials(store, key)
    if found is None and erased:  # every trial of it was erased
        return build_report(run, [], None, erased)
    if found is None:
        raise ReportError(
            f"no evaluation run is named {run!r}; `chronicle sessions` lists sessions, "
            "with their evaluation run"
        )
    return build_report(run, *found, erased=erased)
