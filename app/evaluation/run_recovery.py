"""Finishing API evaluation runs a worker left half done: every worker's periodic sweep.

A trial is scored, and the run's next trials recorded, by the worker whose run of the trial
ended (``api_runs.trial_ended``). A worker that dies between the trial's end and its scores,
or between the scores and the next trials, leaves the run ``running`` with nothing queued:
no lease row is left to expire and nobody else would look. The sweep finds such runs and does
what the dead worker did not, as that worker would have: it scores each ended, unscored trial
that no worker holds (``score_trial``: under the session's claim and with one append after
the events judged, so a trial the sweep and a live worker both reach is scored once), asks a
worker for a trial recorded but never queued, and records the next trials
(``continue_run``: each trial is claimed once by its derived id).

Candidates come from ``app.evaluation.sql.stranded_runs`` (through ``session_state``, so the
sweep reads only evaluation sessions); what is done to each trial is decided from the log.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from uuid import UUID

from app.config import Settings
from app.evaluation.api_runs import RunPlan, continue_run, score_trial
from app.evaluation.sql.evaluation_runs import database_now
from app.evaluation.sql.stranded_runs import stranded_runs
from app.evaluation.trials import has_ended
from app.llm.errors import CONFIGURATION_KINDS
from app.sessions.leases import request_run
from app.store import EventStore

log = logging.getLogger(__name__)


async def recover_runs(store: EventStore, settings: Settings) -> None:
    """One sweep (see the module): every stranded API run taken up where it was left."""
    for run in await stranded_runs(store, CONFIGURATION_KINDS):
        try:
            plan = RunPlan.model_validate(run.request)
        except ValueError as exc:
            log.warning("evaluation run %s: its recorded request is unusable: %s", run.name, exc)
            continue
        await recover_run(store, settings, plan, run.idle)


async def recover_run(
    store: EventStore, settings: Settings, plan: RunPlan, idle: list[UUID]
) -> None:
    """Score the run's ended trials nobody holds, queue those never queued, then record its
    next trials."""
    # The events' times are the database's: so is the clock they are compared with (a worker
    # whose clock runs ahead would otherwise queue a trial another worker has just recorded).
    stale_before = await database_now(store) - timedelta(seconds=settings.worker.lease_duration)
    for session in idle:
        events = await store.read(session)
        if has_ended(events):
            if await score_trial(store, settings, plan, session):
                log.warning(
                    "evaluation run %s: scored trial %s, which a worker left unscored",
                    plan.name, session,
                )  # fmt: skip
        elif not any(event.kind == "agent.state" for event in events) and (
            events and events[-1].created_at < stale_before
        ):  # recorded by a worker that died before it asked for the trial's run
            await request_run(store, session, reason="evaluation")
    started = await continue_run(store, settings, plan)
    if started:
        log.info("evaluation run %s: the sweep recorded %d next trial(s)", plan.name, started)
