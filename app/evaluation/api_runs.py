"""Evaluation runs started through the API: trials queued as sessions for workers, each scored
when its worker sees it end, the next ones started then.

``POST /api/evaluations`` checks the request (``plan_run``) and records the run's first
``concurrency`` trials (``start_run``): each is an ordinary session, recorded as ``chronicle
eval run`` records one (config tagged with the run, task and epoch; the task's files written
in a fresh workspace), owned by the requesting user, with a lease request, so a worker runs it.
Its config also carries the whole request (``evaluation_request``: suite, model, runtime,
trials, concurrency, owner), which is all a worker needs to continue the run. When a worker's
run of a trial ends (``trial_ended``, the worker's ``after_run`` hook) the trial is scored
by the one trial pipeline ``chronicle eval run`` uses too (``app.evaluation.trials``: every
trial scorer, the task's ``check`` in a fresh sandbox over the final workspace among them),
and the run's next trials are recorded until ``concurrency`` trials are unscored again. A
trial is scored once: under the session's claim, every score in one append after the events
judged; what a worker that died left undone, any worker's sweep does
(``app.evaluation.run_recovery``). A trial paused by its
user is not scored: the run waits for it. A trial's session id is derived from the run, task
and epoch, and claimed by inserting its owner row before anything is recorded: two requests
of one name, or two workers whose trials ended at once, start each trial once (the loser
counts it as running), with no lock held while the trial is recorded.

A trial that ends on a configuration error (``app.llm.errors.CONFIGURATION_KINDS``: a key
refused, a model unknown, nothing listening at the base URL) stops the run, as it stops
``chronicle eval run``: it is not scored, no next trial is recorded, and the run reads
``stopped`` with that error as its ``reason``. A model name with no provider is refused with
the request (422).

A run's name is its owner's: it is recorded (``evaluation_run``, what the report views and
``chronicle eval report`` group by) as ``NAME@OWNER-ID`` (``run_key``), and its trials' session
ids and workspaces derive from that key, so another user's run of the same name is a different
run, and starting one never tells whether someone else chose that name.

The suite comes as its YAML text (what ``chronicle eval run`` reads from a file; each problem
found in it is answered with its line, for the page's form) or as that YAML's JSON.

What the API refuses that the command line takes: ``setup`` commands and agent commands
(``agent``; they run on the machine, outside any sandbox: a user of the API must not run
commands on the server) and a
``repo`` outside the configured ``workspace_roots`` (the API must not copy any directory of
the server's machine into a workspace).
"""

from __future__ import annotations

import logging
import os
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from app.config import Settings
from app.errors import ChronicleError
from app.evaluation import trials
from app.evaluation.scorers import BUILTIN, TRIAL_SCORERS
from app.evaluation.sql.evaluation_runs import (
    RunRow,
    claim_trial,
    name_taken,
    owned_trials,
    trial_claim,
)
from app.evaluation.suite import (
    TASK_ID,
    Suite,
    SuiteError,
    SuiteProblem,
    Task,
    parse_suite,
    suite_from_data,
)
from app.evaluation.trials import has_ended, trial_workspace
from app.events.session_config import EvaluationTrial, SessionConfig
from app.llm.errors import CONFIGURATION_KINDS, LlmNotConfiguredError
from app.runtime.kinds import RuntimeKind
from app.sessions.leases import request_run
from app.store import EventStore, SessionBusyError, claim_session

log = logging.getLogger(__name__)

#: Trial session ids are ``uuid5(TRIAL_NAMESPACE, "run\ntask\nepoch")``.
TRIAL_NAMESPACE = uuid.UUID("6f1d3c2e-4b7a-5e10-9a2c-3d8e5f7a9b01")


class EvaluationRequest(BaseModel):
    """``POST /api/evaluations``: run every task of ``suite`` ``trials`` times."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TASK_ID, description="the run's name, unique among your runs")
    suite: dict[str, Any] | str = Field(
        description="the task suite chronicle eval run reads: its YAML text as a string, or "
        "it as JSON: {name, tasks: [{id, prompt, files, check, answer, limits, repo, commit}]}"
    )
    model: str | None = Field(default=None, max_length=200, description="litellm model name")
    runtime: RuntimeKind | None = None
    trials: int = Field(default=1, ge=1, le=100, description="epochs: runs of each task")
    concurrency: int = Field(default=1, ge=1, le=100, description="trials running at once")


class RunPlan(BaseModel):
    """What an API run was started with, recorded in each of its sessions (the trial's
    ``request``)."""

    model_config = ConfigDict(frozen=True)

    name: str
    suite: Suite
    model: str
    base_url: str | None
    runtime: RuntimeKind
    trials: int
    concurrency: int
    owner: UUID
    user: str
    #: what the run is recorded as (``run_key``); None in a run started before runs were
    #: named per owner, recorded under its bare name
    recorded_as: str | None = None

    @property
    def key(self) -> str:
        """The run's ``evaluation_run`` in the log: its trials' ids and workspaces derive
        from it."""
        return self.recorded_as or self.name

    @property
    def total(self) -> int:
        return len(self.suite.tasks) * self.trials

    def trial_order(self) -> list[tuple[Task, int]]:
        """Every task x epoch, in the order they are started (epoch by epoch, as the CLI)."""
        return [(task, epoch) for epoch in range(1, self.trials + 1) for task in self.suite.tasks]


def run_key(name: str, owner: UUID) -> str:
    """What an API run named ``name`` by ``owner`` is recorded as: one name, one run, per
    owner (a name holds no ``@``: ``TASK_ID``)."""
    return f"{name}@{owner}"


class RunRequestError(ChronicleError, ValueError):
    """The request cannot start a run (422); the message says what to change, and
    ``problems`` each thing wrong with its suite (with its line when it came as YAML)."""

    def __init__(self, message: str, problems: list[SuiteProblem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class RunExistsError(ChronicleError, ValueError):
    """A run of that name exists (409)."""


class ActiveSessionsCapError(ChronicleError, RuntimeError):
    """The user has as many active sessions as they may (429)."""


class EvaluationRun(BaseModel):
    """A run's progress: ``GET /api/evaluations/{run}`` and each row of the list."""

    name: str
    #: what the log and the report views call it (``NAME@OWNER-ID`` for an API run); an admin
    #: may ask for a run by it where two users chose the same name
    key: str
    status: Literal["queued", "running", "finished", "stopped"]
    #: why a stopped run stopped: the configuration error its first stopped trial ended on
    reason: str | None = None
    #: who started it (None: ``chronicle eval run``)
    user: str | None
    model: str | None
    created_at: datetime | None
    #: trials (task x epoch) the run has in all (a CLI run: the sessions it recorded)
    total: int
    #: trials whose session is recorded (an API run records the next as earlier ones end)
    started: int
    #: trials scored
    done: int
    passed: int
    failed: int
    trials: int | None = None
    concurrency: int | None = None


def progress_of(row: RunRow) -> EvaluationRun:
    plan = row.request or {}
    total = len((plan.get("suite") or {}).get("tasks") or []) * int(plan.get("trials") or 0)
    total = total or row.started
    finished = row.scored >= total
    status: Literal["queued", "running", "finished", "stopped"] = (
        "finished" if finished
        else "stopped" if row.stopped_by is not None
        else "queued" if row.begun == 0 and row.scored == 0
        else "running"
    )  # fmt: skip
    return EvaluationRun(
        name=plan.get("name") or row.name,
        key=row.name,
        status=status,
        reason=row.stopped_by if status == "stopped" else None,
        user=row.user_name,
        model=row.model,
        created_at=row.created_at,
        total=total,
        started=row.started,
        done=row.scored,
        passed=row.passed,
        failed=row.scored - row.passed,
        trials=plan.get("trials"),
        concurrency=plan.get("concurrency"),
    )


def queued(plan: RunPlan, started: int) -> EvaluationRun:
    """A run just started, before the report views have seen its sessions."""
    return EvaluationRun(
        name=plan.name, key=plan.key, status="queued", user=plan.user, model=plan.model,
        created_at=None, total=plan.total, started=started, done=0, passed=0, failed=0,
        trials=plan.trials, concurrency=plan.concurrency,
    )  # fmt: skip


def _allowed_repository(task: Task, roots: list[Path]) -> Task:
    """The task with its ``repo`` as a real path inside a workspace root; else a refusal."""
    if task.repo is None:
        return task
    where = f"task {task.id!r}, field 'repo'"
    if not roots:
        raise RunRequestError(
            f"{where}: this server takes no repository (no workspace_roots are configured); "
            "give the task's files instead"
        )
    if not os.path.isabs(task.repo):
        raise RunRequestError(f"{where}: {task.repo!r} must be an absolute path")
    real = Path(os.path.realpath(task.repo))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if (real == real_root or real.is_relative_to(real_root)) and real.is_dir():
            return task.model_copy(update={"repo": str(real)})
    raise RunRequestError(
        f"{where}: {task.repo} is not a directory under the configured workspace roots"
    )


def plan_run(settings: Settings, request: EvaluationRequest, owner: UUID, user: str) -> RunPlan:
    """Check the request (the suite as ``chronicle eval run`` checks it, plus what the API
    refuses: see the module) and say what the run will do."""
    try:
        if isinstance(request.suite, str):
            suite = parse_suite(request.suite, "in the request")
        else:
            suite = suite_from_data(request.suite, "in the request")
    except SuiteError as exc:
        raise RunRequestError(str(exc), exc.problems) from None
    for task in suite.tasks:
        if task.setup:
            raise RunRequestError(
                f"task {task.id!r}, field 'setup': setup commands run on the server's machine "
                "outside any sandbox, so the API does not take them; give the task's files "
                "instead, or run the suite with chronicle eval run"
            )
        if task.agent is not None:
            raise RunRequestError(
                f"task {task.id!r}, field 'agent': an agent command runs on the server's machine "
                "outside any sandbox, so the API does not take one; run the suite with "
                "chronicle eval run"
            )
    roots = list(settings.server.workspace_roots)
    suite = suite.model_copy(
        update={"tasks": [_allowed_repository(task, roots) for task in suite.tasks]}
    )
    cap = settings.server.max_active_sessions
    if request.concurrency > cap:
        raise RunRequestError(
            f"concurrency {request.concurrency} is more than the {cap} sessions one user may "
            f"have working at once; ask for {cap} or fewer"
        )
    try:
        llm = settings.llm.config(model=request.model)
    except LlmNotConfiguredError:
        raise RunRequestError(
            "no model: name one in the request's model, or configure llm_model on the server"
        ) from None
    return RunPlan(
        name=request.name, suite=suite, model=llm.model, base_url=llm.base_url,
        runtime=request.runtime or settings.sandbox.kind, trials=request.trials,
        concurrency=request.concurrency, owner=owner, user=user,
        recorded_as=run_key(request.name, owner),
    )  # fmt: skip


async def start_run(store: EventStore, settings: Settings, plan: RunPlan) -> EvaluationRun:
    """Take the run's name and record its first trials for workers (see the module): the
    name is taken by claiming the run's first trial, so of requests of one name at once one
    starts the run and the others are refused."""
    if await name_taken(store, plan.owner, [plan.key, plan.name]):
        raise RunExistsError(
            f"you have an evaluation run named {plan.name!r} already; choose another name"
        )
    cap = settings.server.max_active_sessions
    task, epoch = plan.trial_order()[0]
    first = trial_session_id(plan.key, task.id, epoch)
    claim = await claim_trial(store, first, plan.owner, cap)
    just_now = RunExistsError(
        f"your evaluation run named {plan.name!r} was started just now; choose another name"
    )
    # A first trial claimed and never recorded is a request whose process died while it took
    # the name: once the claim is older than a lease, the name is free again for its owner.
    if claim == "taken" and not await _abandoned(store, settings, first, owner=plan.owner):
        raise just_now
    if claim == "capped":
        raise ActiveSessionsCapError(
            f"you have {cap} sessions working already (the most one user may have); wait "
            "until one ends, or stop one"
        )
    if await _start_trial(store, settings, plan, task, epoch, first) is None and claim == "taken":
        raise just_now  # another request took the abandoned name over first
    started = 1 + await _start_next(store, settings, plan, cap=cap)
    return queued(plan, started)


def trial_session_id(run: str, task_id: str, epoch: int) -> UUID:
    """The session id of a run's trial: the same for whoever starts it, so it is started
    once (``claim_trial``)."""
    return uuid.uuid5(TRIAL_NAMESPACE, f"{run}\n{task_id}\n{epoch}")


async def _start_next(
    store: EventStore, settings: Settings, plan: RunPlan, *, cap: int | None
) -> int:
    """Record the run's next trials until ``concurrency`` are unscored (``cap``: each counts
    against the owner's cap of active sessions, and the first refused stops); how many this
    call started. One found started by another meanwhile counts as running: whoever started
    it runs it."""
    trials = await owned_trials(store, plan.owner, plan.key, CONFIGURATION_KINDS)
    if any(trial.stopped_by is not None for trial in trials):
        return 0  # the run stopped on a configuration error (see the module)
    recorded = {(trial.task_id, trial.epoch) for trial in trials}
    active = sum(not trial.scored for trial in trials)
    started = 0
    for task, epoch in plan.trial_order():
        if active >= plan.concurrency:
            break
        if (task.id, epoch) in recorded:
            continue
        session_id = trial_session_id(plan.key, task.id, epoch)
        claim = await claim_trial(store, session_id, plan.owner, cap)
        if claim == "capped":
            break
        active += 1
        if claim == "taken" and not await _abandoned(store, settings, session_id):
            continue
        outcome = await _start_trial(store, settings, plan, task, epoch, session_id)
        if outcome is None:
            continue  # another process holds it or recorded it meanwhile: it runs it
        started += 1
        if not outcome:
            active -= 1  # scored at once: its workspace could not be prepared
    return started


async def _abandoned(
    store: EventStore, settings: Settings, session: UUID, *, owner: UUID | None = None
) -> bool:
    """Whether a trial claimed but never recorded may be recorded by this process: its
    claim is older than a lease (``_start_trial`` holds the session's claim while it records,
    and checks the log under it, so a process that is still recording keeps it), and, with
    ``owner``, was made by that user."""
    claim = await trial_claim(store, session)
    if claim is None or (owner is not None and claim.owner != owner):
        return False
    return claim.age.total_seconds() > settings.worker.lease_duration


def trial_config(
    settings: Settings, plan: RunPlan, task: Task, epoch: int, workspace: Path
) -> SessionConfig:
    """``session.created``'s config: ``chronicle run``'s (``run_config``), tagged as
    ``chronicle eval run`` tags it, with the request."""
    evaluation_plan = {
        "epochs": plan.trials,
        "concurrency": plan.concurrency,
        "model": plan.model,
        "base_url": plan.base_url,
        "runtime": plan.runtime,
    }
    trial = EvaluationTrial(
        run=plan.key,
        task=task.model_dump(mode="json"),
        epoch=epoch,
        attempt=1,
        resume=0,
        plan=evaluation_plan,
        request=plan.model_dump(mode="json"),
    )
    return trials.trial_config(
        settings, task, workspace, runtime=plan.runtime, model=plan.model,
        base_url=plan.base_url, evaluation=trial.model_dump(mode="json"),
    )  # fmt: skip


async def _start_trial(
    store: EventStore, settings: Settings, plan: RunPlan, task: Task, epoch: int, session: UUID
) -> bool | None:
    """Record one trial and ask a worker to run it (True); a trial whose workspace cannot be
    prepared is recorded as an error and scored at once (False). Recorded under the session's
    claim, so a process that died while recording it (kill -9 while its workspace was
    prepared) leaves it to the next sweep (``_abandoned``) instead of stranding the run; None
    when another process holds that claim or recorded the trial already."""
    try:
        async with claim_session(store, session, on_lost=_recording_lost):
            if await store.last_seq(session) > 0:
                return None
            problem = await _record_trial(store, settings, plan, task, epoch, session)
    except SessionBusyError:
        return None
    if problem is not None:
        await score_trial(store, settings, plan, session)
        return False
    await request_run(store, session, reason="evaluation")
    return True


def _recording_lost() -> None:
    """The claim's connection died while a trial was recorded: the append that follows
    fails on the same database, and an unrecorded trial is taken up by a sweep."""
    log.warning("lost the database while recording an evaluation trial")


async def _record_trial(
    store: EventStore, settings: Settings, plan: RunPlan, task: Task, epoch: int, session: UUID
) -> str | None:
    """Record the trial as ``chronicle eval run`` records one (``trials.record_trial``):
    what went wrong preparing its workspace, recorded as its error, or None."""
    workspace = trial_workspace(settings.data_dir, plan.key, task.id, epoch)
    return await trials.record_trial(
        store, settings, session, task=task, workspace=workspace, source_dir=settings.data_dir,
        config=trial_config(settings, plan, task, epoch, workspace), user=plan.user,
    )  # fmt: skip


async def score_trial(store: EventStore, settings: Settings, plan: RunPlan, session: UUID) -> bool:
    """Score an ended trial of ``plan`` once, by the trial pipeline ``chronicle eval run``
    uses too (``app.evaluation.trials``); True when this call recorded its scores."""
    scorers = [BUILTIN[name] for name in TRIAL_SCORERS]
    scoring = await trials.score_trial(store, settings, session, scorers, runtime=plan.runtime)
    if scoring.outcome == "error":
        log.warning("trial %s of run %s cannot be scored: %s", session, plan.name, scoring.error)
    return scoring.recorded


async def plan_of(store: EventStore, session: UUID) -> RunPlan | None:
    """The API run the session is a trial of (its recorded request); None for any other."""
    head = await store.read(session, limit=1)
    if not head or head[0].kind != "session.created":
        return None
    trial = SessionConfig.of_payload(head[0].payload).evaluation
    request = trial.request if trial is not None else None
    return None if request is None else RunPlan.model_validate(request)


async def continue_run(store: EventStore, settings: Settings, plan: RunPlan) -> int:
    """Record the run's next trials until ``concurrency`` are unscored again (how many), each
    within the owner's cap of working sessions, as when the run started (a user's runs and
    sessions together never have more working); one left out for the cap is recorded by a
    later sweep (``run_recovery``), once a place is free."""
    return await _start_next(store, settings, plan, cap=settings.server.max_active_sessions)


async def trial_ended(store: EventStore, settings: Settings, session: UUID) -> None:
    """The worker's hook after it ran a session: for a trial of an API run that ended, score
    it, then start the run's next trials (see the module). Any other session: nothing."""
    plan = await plan_of(store, session)
    if plan is None:
        return
    if not has_ended(await store.read(session)):
        return  # paused by its user, or not run yet: the run waits for it
    await score_trial(store, settings, plan, session)
    await continue_run(store, settings, plan)
