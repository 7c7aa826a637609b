"""Running a suite: every task x epoch as an ordinary recorded session, tagged with the
evaluation run, at most N at a time, each scored as soon as it ends.

A task's session is a `chronicle run` session like any other (same runner, sandbox, limits,
claim): its ``session.created`` config adds ``evaluation_run``, ``evaluation_task`` and
``evaluation_epoch`` (``evaluation_config``), so the session list, SQL and the scorers know
it. It is scored as it ends by the one trial pipeline the API's workers use too
(``app.evaluation.trials``: every scorer of the run in one guarded append; a task's ``check``
runs in a fresh sandbox over the final workspace). A task passes when every verdict recorded
on it (label ``pass`` / ``fail`` / ``error``) is a pass.

Resuming (``chronicle eval run --resume NAME``) reads what the run recorded: the plan (suite,
epochs, model, runtime: ``evaluation_plan`` in every session's config) and each task x epoch's
newest session. A session that ended is not run again (one that ended before its run scored
it is scored now). A session that was mid-flight when its process died (status ``working``
without a process holding it) or was stopped by a signal (``interrupted by SIGINT``) is run
again from the start, as a new attempt in a fresh workspace, not resumed: its agent saw an
interruption no uninterrupted trial sees (an action answered ``interrupted``, a stop) and its
workspace may hold half a command's effects, so its outcome would not be a comparable trial.
The interrupted session stays in the log; the report views count the newest attempt
(``evaluation_attempt``) and say how often the run was resumed (``evaluation_resume``).

A configuration error (a key refused or missing, a model or provider unknown, a base URL where
nothing listens: ``app.llm.errors.CONFIGURATION_KINDS``) would fail every trial alike, so the
run stops at the first trial that ends on one (``RunStopped``): trials not started yet are not
started, and that trial is left unscored, so the run is ``stopped`` with its reason until
``--resume`` runs it again as a new attempt. A model name with no provider, or no model at
all, is refused before any trial is recorded.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.config import Settings
from app.errors import ChronicleError
from app.evaluation.external_agent import CommandRecorder, agents_problem, run_agent_command
from app.evaluation.rescoring import suite_tasks
from app.evaluation.scoring import ScoredSession, Scorer, evaluation_config
from app.evaluation.sql.evaluation_rows import RunAttempt, counted_trials, run_attempts
from app.evaluation.suite import Suite, Task
from app.evaluation.trials import record_trial, score_trial, trial_config, trial_workspace
from app.evaluation.workspaces import WorkspaceError, prepare_workspace, repository_path
from app.events.session_config import EvaluationTrial
from app.llm.errors import (
    CONFIGURATION_KINDS,
    LlmError,
    LlmNotConfiguredError,
    is_configuration_error,
    model_name_problem,
)
from app.projections import SessionState, bring_up_to_date
from app.sessions.runner import SessionError, SessionOptions, run_session
from app.store import EventStore


class RunOptions(BaseModel):
    """What ``chronicle eval run`` sets for every session of the run."""

    model_config = ConfigDict(frozen=True)

    name: str
    epochs: int = 1
    concurrency: int = 1
    model: str | None = None
    base_url: str | None = None
    runtime: str | None = None
    #: the suite's file, recorded so a resume finds it
    suite: str | None = None

    def plan(self) -> dict[str, Any]:
        """What a resume needs to continue the run as it was started."""
        return self.model_dump(mode="json", exclude={"name"})


class TaskResult(BaseModel):
    """One task x epoch: its session, how it ended, and whether it passed."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    epoch: int
    session_id: UUID | None
    outcome: str
    passed: bool
    cost_usd: float
    error: str | None = None
    #: the configuration error this trial ended on, which stops the run (not scored)
    stopped_by: str | None = None


class Progress(BaseModel):
    """The run so far, as the progress line shows it."""

    total: int
    done: int = 0
    passed: int = 0
    failed: int = 0
    cost_usd: Decimal = Decimal(0)

    def line(self) -> str:
        return (
            f"[{self.done}/{self.total}] passed {self.passed}, failed {self.failed}, "
            f"cost ${self.cost_usd.normalize():f}"
        )


class RunError(ChronicleError):
    """The run cannot start; the message says why."""


class RunStopped(ChronicleError):
    """A trial ended on a configuration error (``TaskResult.stopped_by``): the run stopped
    there; fix the configuration and resume it."""

    def __init__(self, trial: TaskResult) -> None:
        super().__init__(trial.stopped_by)
        self.trial = trial
        self.reason = trial.stopped_by or ""


def recorded_plan(attempts: Sequence[RunAttempt]) -> RunOptions | None:
    """The options the run was started with, as its newest session recorded them."""
    for attempt in reversed(attempts):
        if attempt.plan is not None:
            return RunOptions.model_validate(json.loads(attempt.plan) | {"name": "-"})
    return None


def interrupted(attempt: RunAttempt) -> bool:
    """Run again on resume: mid-flight when its run stopped (no process runs it, and it did
    not end on its own), or ended on the configuration error that stopped its run."""
    if attempt.stopped_by is not None:
        return True
    if attempt.status in (None, "working"):
        return not attempt.claimed
    return attempt.status == "stopped" and (attempt.state_reason or "").startswith("interrupted")


async def check_model(settings: Settings, options: RunOptions) -> None:
    """Refuse a run whose model is named nowhere or has no provider (``RunError``), before
    any trial is recorded: every trial would fail alike."""
    try:
        llm = settings.llm.config(model=options.model, base_url=options.base_url)
    except LlmNotConfiguredError as exc:
        raise RunError(exc.message) from None
    problem = await asyncio.to_thread(model_name_problem, llm.model)
    if problem is not None:
        raise RunError(problem)


async def run_suite(
    store: EventStore,
    settings: Settings,
    suite: Suite,
    suite_dir: Path,
    options: RunOptions,
    scorers: Sequence[Scorer],
    on_progress: Callable[[Progress], None] = lambda progress: None,
    *,
    resume: bool = False,
    recorder: CommandRecorder | None = None,
) -> list[TaskResult]:
    """Run and score every task x epoch; results in suite order, epoch by epoch. With
    ``resume`` the run named exists, and what it finished is kept (see the module). Raises
    ``RunStopped`` when a trial ended on a configuration error. ``recorder`` runs the tasks
    whose agent is a command (``external_agent``)."""
    if any(task.agent is None for task in suite.tasks):
        await check_model(settings, options)
    problem = await agents_problem(suite, recorder)
    if problem is not None:
        raise RunError(problem)
    await bring_up_to_date(store, SessionState(), settings.projections)
    attempts = await run_attempts(store, options.name, CONFIGURATION_KINDS)
    newest: dict[tuple[str | None, int], RunAttempt] = {}
    for attempt in attempts:
        key = (attempt.task_id, attempt.epoch)
        if key not in newest or attempt.attempt > newest[key].attempt:
            newest[key] = attempt
    stopped = next((a.stopped_by for a in newest.values() if a.stopped_by is not None), None)
    if stopped is not None and not resume:
        raise RunError(
            f"evaluation run {options.name!r} stopped: {stopped}; resume it with --resume "
            f"{options.name} or choose another --name"
        )
    if attempts and not resume:
        raise RunError(
            f"an evaluation run named {options.name!r} exists already; choose another --name, "
            f"or continue it with --resume {options.name}"
        )
    if resume and not attempts:
        raise RunError(f"there is no evaluation run named {options.name!r} to resume")
    running = [a for a in attempts if a.claimed and a.status in (None, "working")]
    if running:
        raise RunError(
            f"evaluation run {options.name!r} is running in another process (session "
            f"{running[0].session_id}); resume it once that process has stopped"
        )
    resume_number = max((a.resume for a in attempts), default=-1) + 1
    work = [(task, epoch) for epoch in range(1, options.epochs + 1) for task in suite.tasks]
    progress = Progress(total=len(work))
    limit = asyncio.Semaphore(options.concurrency)
    task_for = suite_tasks(suite, None)
    done = await _done_results(store, options.name)

    def count(result: TaskResult) -> TaskResult:
        progress.done += 1
        progress.passed += result.passed
        progress.failed += not result.passed
        progress.cost_usd += Decimal(repr(result.cost_usd))
        return result

    kept: dict[tuple[str, int], TaskResult] = {}
    for task, epoch in work:
        earlier = newest.get((task.id, epoch))
        if earlier is not None and earlier.scored and not interrupted(earlier):
            if (task.id, epoch) in done:
                kept[(task.id, epoch)] = count(done[(task.id, epoch)])
    on_progress(progress)

    stop: list[TaskResult] = []  # the trial that stopped the run, once one did

    async def one(task: Task, epoch: int) -> TaskResult | None:
        if (task.id, epoch) in kept:
            return kept[(task.id, epoch)]
        earlier = newest.get((task.id, epoch))
        async with limit:
            if stop:
                return None  # not started: the run stopped
            if earlier is not None and not interrupted(earlier):
                result = await _score_ended(store, settings, options, task, earlier, scorers,
                                            task_for)  # fmt: skip
            else:
                number = 1 if earlier is None else earlier.attempt + 1
                attempt = EvaluationTrial(attempt=number, resume=resume_number, plan=options.plan())
                result = await _run_task(store, settings, suite_dir, options, task, epoch,
                                         scorers, task_for, attempt, recorder)  # fmt: skip
            if result.stopped_by is not None:
                stop.append(result)
                return result
        count(result)
        on_progress(progress)
        return result

    # return_exceptions: a cancelled run (SIGINT) waits for every trial to record its stop
    # before the cancellation goes on (else the first trial cancelled ends the gather, and the
    # caller closes the store under the others).
    ended = await asyncio.gather(
        *(one(task, epoch) for task, epoch in work), return_exceptions=True
    )
    failed = next((e for e in ended if isinstance(e, BaseException)), None)
    if failed is not None:
        raise failed
    if stop:
        raise RunStopped(stop[0])
    return [result for result in ended if isinstance(result, TaskResult)]


async def _done_results(store: EventStore, run: str) -> dict[tuple[str, int], TaskResult]:
    """Each finished trial of the run as the report views count it."""
    return {
        (trial.task_id, trial.epoch): TaskResult(
            task_id=trial.task_id,
            epoch=trial.epoch,
            session_id=trial.session_id,
            outcome=trial.status or "unknown",
            passed=trial.passed,
            cost_usd=float(trial.cost_usd or 0),
        )
        for trial in await counted_trials(store, run)
    }


async def _score_ended(
    store: EventStore,
    settings: Settings,
    options: RunOptions,
    task: Task,
    earlier: RunAttempt,
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None],
) -> TaskResult:
    """A session that ended before its run scored it: score it (and run its check) now."""
    return await _scored(store, settings, options, task, earlier.epoch, earlier.session_id,
                         earlier.status or "unknown", scorers, task_for)  # fmt: skip


async def _run_task(
    store: EventStore,
    settings: Settings,
    suite_dir: Path,
    options: RunOptions,
    task: Task,
    epoch: int,
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None],
    attempt: EvaluationTrial,
    recorder: CommandRecorder | None = None,
) -> TaskResult:
    workspace = trial_workspace(
        settings.data_dir, options.name, task.id, epoch, attempt.attempt or 1
    )
    failed = TaskResult(task_id=task.id, epoch=epoch, session_id=None, outcome="error",
                        passed=False, cost_usd=0.0)  # fmt: skip
    # recorded with its repository as an absolute path: the offline check clones from it
    recorded = (
        task
        if task.repo is None
        else task.model_copy(update={"repo": str(repository_path(task.repo, suite_dir).resolve())})
    )
    evaluation = evaluation_config(options.name, recorded, epoch) | attempt.model_dump(mode="json")
    if task.agent is not None:  # the task's own agent command records its session
        try:
            await prepare_workspace(task, workspace, suite_dir)
        except WorkspaceError as exc:
            return failed.model_copy(update={"error": str(exc)})
        assert recorder is not None  # run_suite refuses such a suite without one
        end = await run_agent_command(recorder, task.agent, task, epoch, workspace, suite_dir,
                                      evaluation)  # fmt: skip
        if end.session_id is None:
            stop = {"stopped_by": end.error} if end.stops_run else {}
            return failed.model_copy(update={"error": end.error} | stop)
        scored = await _scored(store, settings, options, task, epoch, end.session_id,
                               end.outcome, scorers, task_for)  # fmt: skip
        return scored if end.error is None else scored.model_copy(update={"error": end.error})
    # recorded as the API's workers' trials are, then run as any recorded session is
    session_id = uuid.uuid4()
    config = trial_config(settings, recorded, workspace, runtime=options.runtime,
                          model=options.model, base_url=options.base_url,
                          evaluation=evaluation)  # fmt: skip
    problem = await record_trial(store, settings, session_id, task=recorded, workspace=workspace,
                                 source_dir=suite_dir, config=config)  # fmt: skip
    if problem is not None:
        errored = await _scored(store, settings, options, task, epoch, session_id, "error",
                                scorers, task_for)  # fmt: skip
        return errored.model_copy(update={"error": problem})
    session_options = SessionOptions(
        runtime=options.runtime,
        model=options.model,
        base_url=options.base_url,
        max_iterations=task.limits.max_iterations,
        max_cost_usd=task.limits.max_cost_usd,
    )
    try:
        _, outcome = await run_session(store, settings, session_options, session_id=session_id)
    except SessionError as exc:
        return failed.model_copy(update={"error": str(exc)})
    except LlmError as exc:
        if not is_configuration_error(exc.kind):
            raise
        return failed.model_copy(update={"error": exc.message, "stopped_by": exc.message})
    return await _scored(store, settings, options, task, epoch, session_id, outcome, scorers,
                         task_for)  # fmt: skip


async def _scored(
    store: EventStore,
    settings: Settings,
    options: RunOptions,
    task: Task,
    epoch: int,
    session_id: UUID,
    outcome: str,
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None],
) -> TaskResult:
    """Score an ended trial by the trial pipeline, and say if it passed. One that ended on a
    configuration error is left unscored: the run stops, and a resume runs it again."""
    failed = TaskResult(task_id=task.id, epoch=epoch, session_id=session_id, outcome=outcome,
                        passed=False, cost_usd=0.0)  # fmt: skip
    scoring = await score_trial(
        store, settings, session_id, scorers, runtime=options.runtime, task_for=task_for
    )
    if scoring.outcome == "stopped":
        return failed.model_copy(update={"error": scoring.error, "stopped_by": scoring.error})
    if not scoring.scores and scoring.outcome != "scored":
        why = scoring.error or f"the trial was not scored ({scoring.outcome})"
        return failed.model_copy(update={"error": why})
    labels = [s.label for s in scoring.scores.values()]
    verdicts = [label for label in labels if label in ("pass", "fail", "error")]
    cost = scoring.scores.get("cost")
    return TaskResult(
        task_id=task.id,
        epoch=epoch,
        session_id=session_id,
        outcome=outcome,
        passed=bool(verdicts) and all(label == "pass" for label in verdicts),
        cost_usd=cost.value if cost is not None and cost.value is not None else 0.0,
    )
