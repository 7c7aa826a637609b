"""Running a suite: every task x epoch as an ordinary recorded session, tagged with the
evaluation run, at most N at a time, each scored as soon as it ends.

A task's session is a `chronicle run` session like any other (same runner, sandbox, limits,
claim): its ``session.created`` config adds ``evaluation_run``, ``evaluation_task`` and
``evaluation_epoch`` (``evaluation_config``), so the session list, SQL and the scorers know
it. A task with a ``check`` has it run right after its session, in a fresh sandbox over the
final workspace (``live_check.py``). A task passes when every verdict recorded on it (label
``pass`` / ``fail`` / ``error``) is a pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.config import Settings
from app.evaluation.live_check import record_check, run_check
from app.evaluation.rescoring import score_session, suite_tasks
from app.evaluation.scoring import ScoredSession, Scorer, ScoringError, evaluation_config
from app.evaluation.suite import Suite, Task
from app.evaluation.workspaces import WorkspaceError, prepare_workspace, repository_path
from app.projections import SessionState, bring_up_to_date
from app.sessions.runner import SessionError, SessionOptions, run_session
from app.store import EventStore
from app.store.evaluation_rows import evaluation_run_sessions


class RunOptions(BaseModel):
    """What ``chronicle eval run`` sets for every session of the run."""

    model_config = ConfigDict(frozen=True)

    name: str
    epochs: int = 1
    concurrency: int = 1
    model: str | None = None
    base_url: str | None = None
    runtime: str | None = None


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


class RunError(Exception):
    """The run cannot start; the message says why."""


async def run_suite(
    store: EventStore,
    settings: Settings,
    suite: Suite,
    suite_dir: Path,
    options: RunOptions,
    scorers: Sequence[Scorer],
    on_progress: Callable[[Progress], None] = lambda progress: None,
) -> list[TaskResult]:
    """Run and score every task x epoch; results in suite order, epoch by epoch."""
    await bring_up_to_date(store, SessionState(), settings.projections_config())
    if await evaluation_run_sessions(store, options.name):
        raise RunError(
            f"an evaluation run named {options.name!r} exists already; choose another --name"
        )
    work = [(task, epoch) for epoch in range(1, options.epochs + 1) for task in suite.tasks]
    progress = Progress(total=len(work))
    limit = asyncio.Semaphore(options.concurrency)
    task_for = suite_tasks(suite, None)
    on_progress(progress)

    async def one(task: Task, epoch: int) -> TaskResult:
        async with limit:
            result = await _run_task(store, settings, suite_dir, options, task, epoch, scorers,
                                     task_for)  # fmt: skip
        progress.done += 1
        progress.passed += result.passed
        progress.failed += not result.passed
        progress.cost_usd += Decimal(repr(result.cost_usd))
        on_progress(progress)
        return result

    return list(await asyncio.gather(*(one(task, epoch) for task, epoch in work)))


async def _run_task(
    store: EventStore,
    settings: Settings,
    suite_dir: Path,
    options: RunOptions,
    task: Task,
    epoch: int,
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None],
) -> TaskResult:
    workspace = settings.data_dir / "evaluations" / options.name / task.id / f"epoch-{epoch}"
    failed = TaskResult(task_id=task.id, epoch=epoch, session_id=None, outcome="error",
                        passed=False, cost_usd=0.0)  # fmt: skip
    try:
        await prepare_workspace(task, workspace, suite_dir)
    except WorkspaceError as exc:
        return failed.model_copy(update={"error": str(exc)})
    # recorded with its repository as an absolute path: the offline check clones from it
    recorded = (
        task
        if task.repo is None
        else task.model_copy(update={"repo": str(repository_path(task.repo, suite_dir).resolve())})
    )
    session_options = SessionOptions(
        workspace=workspace,
        runtime=options.runtime,
        model=options.model,
        base_url=options.base_url,
        max_iterations=task.limits.max_iterations,
        max_cost_usd=task.limits.max_cost_usd,
        evaluation=evaluation_config(options.name, recorded, epoch),
    )
    try:
        session_id, outcome = await run_session(store, settings, session_options, task=task.prompt)
    except SessionError as exc:
        return failed.model_copy(update={"error": str(exc)})
    try:
        scored = await score_session(store, session_id, scorers, task_for)
    except ScoringError as exc:
        return failed.model_copy(
            update={"session_id": session_id, "outcome": outcome, "error": str(exc)}
        )
    labels = [s.label for s in scored.scores.values()]
    if task.check is not None:
        check = await run_check(settings, workspace, session_id, task.check, options.runtime)
        await record_check(store, session_id, check, options.name)
        labels.append(check.label)
    verdicts = [label for label in labels if label in ("pass", "fail", "error")]
    cost = scored.scores.get("cost")
    return TaskResult(
        task_id=task.id,
        epoch=epoch,
        session_id=session_id,
        outcome=outcome,
        passed=bool(verdicts) and all(label == "pass" for label in verdicts),
        cost_usd=cost.value if cost is not None and cost.value is not None else 0.0,
    )
