"""One evaluation trial's lifecycle, the same for ``chronicle eval run`` and the API's workers.

A trial is one task x epoch of a run, and an ordinary recorded session:

1. planned: the run says which trials it has, in order, epoch by epoch (``RunOptions`` on
   the command line, ``RunPlan`` in the API), and where each one's workspace is
   (``trial_workspace``);
2. recorded (``record_trial``, for both): its task's files written in a fresh workspace,
   its ``session.created`` config tagged with the run, task and epoch (``EvaluationTrial``),
   its prompt, and the workspace as it starts; a workspace that cannot be prepared is
   recorded as the trial's error (and scored at once). A task with an agent command of its
   own is recorded by that command instead (``chronicle record``, ``external_agent``);
3. run: the recorded session, by the session runner, as any recorded session is run: in
   this process (``chronicle eval run``) or by a worker that takes the trial's lease (the
   API);
4. scored, here, once it ended: every scorer of ``TRIAL_SCORERS`` (the pure ones over the
   log, the I/O ones such as ``check`` in a fresh sandbox over the trial's own workspace)
   judges it, and all the scores are written in ONE guarded append.

The guard is what lets two processes reach one trial (the worker whose run ended and any
worker's sweep after a worker died, or a resumed ``chronicle eval run``) and score it once:
the scoring holds the session's claim (a second scorer finds it busy and leaves it), reads the
log under it, leaves a trial that has not ended, was scored already, or stopped its run on a
configuration error, and appends every score with ``expected_seq`` = the last event judged,
so a trial that was scored or grew meanwhile is not scored again. The claim is dropped with
its connection when the process dies, so another process takes the trial over.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.agent.codeact import CodeActAgent
from app.config import Settings
from app.evaluation.scoring import (
    Score,
    ScoredSession,
    Scorer,
    ScoringContext,
    ScoringError,
    judge,
    latest_scores,
    score_event,
)
from app.evaluation.sql.trial_stops import trial_stop
from app.evaluation.suite import Task
from app.evaluation.workspaces import WorkspaceError, prepare_workspace
from app.events import AgentState, Message, SessionCreated
from app.events.session_config import SessionConfig
from app.llm.errors import CONFIGURATION_KINDS
from app.sessions.run_config import run_config
from app.sessions.summary import one_line_title
from app.sessions.workspace import record_workspace_start
from app.store import ConcurrencyError, EventStore, RecordedEvent, SessionBusyError, claim_session

log = logging.getLogger(__name__)

#: The agent states after which a trial is scored (a paused trial is waited for).
ENDED = frozenset({"finished", "stopped", "error", "awaiting_user_input"})

Outcome = Literal["scored", "scored already", "busy", "not ended", "stopped", "grew", "error"]


class TrialScoring(BaseModel):
    """What scoring a trial came to: its scores (those recorded now, or the ones it had),
    or why it was not scored."""

    model_config = ConfigDict(frozen=True)

    outcome: Outcome
    scores: dict[str, Score] = {}
    #: why it was not scored: the scoring error, or the configuration error that stopped it
    error: str | None = None

    @property
    def recorded(self) -> bool:
        """Whether this call wrote the trial's scores."""
        return self.outcome == "scored"


def trial_workspace(data_dir: Path, run: str, task_id: str, epoch: int, attempt: int = 1) -> Path:
    """Where a trial's workspace is: one directory per run, task, epoch and attempt."""
    where = f"epoch-{epoch}" + (f"-attempt-{attempt}" if attempt > 1 else "")
    return data_dir / "evaluations" / run / task_id / where


def trial_config(
    settings: Settings,
    task: Task,
    workspace: Path,
    *,
    runtime: str | None,
    model: str | None,
    base_url: str | None,
    evaluation: Mapping[str, Any],
) -> SessionConfig:
    """A trial's ``session.created`` config: what ``chronicle run`` records for a session of
    the task with the run's model and runtime (``run_config``; MCP tools are listed when its
    run starts them), tagged with ``evaluation`` (``EvaluationTrial``'s keys)."""
    return run_config(
        agent=CodeActAgent,
        workspace=Path(os.path.abspath(workspace)),
        runtime=runtime or settings.sandbox.kind,
        sandbox_base_image=settings.sandbox.docker.base_image,
        llm=settings.llm.config(model=model, base_url=base_url),
        mcp_servers=settings.mcp_servers,
        max_iterations=task.limits.max_iterations,
        max_cost_usd=task.limits.max_cost_usd,
        stuck_detection=True,
        extra=evaluation,
    )


async def record_trial(
    store: EventStore,
    settings: Settings,
    session: UUID,
    *,
    task: Task,
    workspace: Path,
    source_dir: Path,
    config: SessionConfig,
    user: str | None = None,
) -> str | None:
    """Record a trial (step 2): prepare its workspace (``source_dir``: where the task's
    relative repository is found), record its first events as any session's, and the
    workspace as it starts. What went wrong preparing the workspace is recorded as the
    trial's error and returned (the trial is then scored at once); None when it is ready to
    run. Appended at ``expected_seq=0``: a trial is recorded once."""
    problem = None
    try:
        await prepare_workspace(task, workspace, source_dir)
    except WorkspaceError as exc:
        problem = str(exc)
    await store.append(
        session,
        [
            SessionCreated(title=one_line_title(task.prompt), config=config, user=user),
            Message(content=task.prompt, source="user", user=user),
        ],
        expected_seq=0,
    )
    if problem is not None:
        reason = f"the task's workspace could not be prepared: {problem}"
        await store.append(session, [AgentState(state="error", reason=reason)])
        return problem
    baseline = await record_workspace_start(store, session, workspace, settings)
    if baseline is not None:
        baseline.close()
    return None


def has_ended(events: Sequence[RecordedEvent]) -> bool:
    """Whether the trial's agent last said it ended (a paused or running one has not)."""
    states = [event.payload.get("state") for event in events if event.kind == "agent.state"]
    return bool(states) and states[-1] in ENDED


async def score_trial(
    store: EventStore,
    settings: Settings,
    session: UUID,
    scorers: Sequence[Scorer],
    *,
    runtime: str | None,
    task_for: Callable[[ScoredSession], Task | None] | None = None,
) -> TrialScoring:
    """Score an ended trial once (see the module). ``runtime``: the run's runtime kind, for
    the I/O scorers' sandboxes; ``task_for``: the task it is judged against (default: the one
    it recorded; ``chronicle eval run`` judges against its suite's)."""
    this = asyncio.current_task()
    assert this is not None
    lost = asyncio.Event()

    def database_gone() -> None:
        lost.set()
        this.cancel("the database went away while the trial was scored")

    try:
        async with claim_session(store, session, on_lost=database_gone):
            return await _score_claimed(store, settings, session, scorers, runtime, task_for)
    except SessionBusyError:
        log.info("trial %s is being scored by another process", session)
        return TrialScoring(outcome="busy")
    except asyncio.CancelledError:
        if not lost.is_set():
            raise
        this.uncancel()
        log.warning("trial %s: the database went away while it was scored", session)
        return TrialScoring(outcome="busy", error="the database went away while it was scored")


async def _score_claimed(
    store: EventStore,
    settings: Settings,
    session: UUID,
    scorers: Sequence[Scorer],
    runtime: str | None,
    task_for: Callable[[ScoredSession], Task | None] | None,
) -> TrialScoring:
    events = await store.read(session)
    if any(event.kind == "eval.score" for event in events):
        return TrialScoring(outcome="scored already", scores=_recorded_scores(events))
    if not has_ended(events):
        return TrialScoring(outcome="not ended")
    stopped_by = await trial_stop(store, session, CONFIGURATION_KINDS)
    if stopped_by is not None:  # not a trial of the agent: its run stops, a resume reruns it
        return TrialScoring(outcome="stopped", error=stopped_by)
    try:
        judged = ScoredSession(events)
        if task_for is not None:
            judged.task = task_for(judged)
        workspace = judged.config.workspace
        context = ScoringContext(judged, settings, Path(workspace) if workspace else None, runtime)
        scored = await judge(scorers, context)
    except ScoringError as exc:
        log.warning("trial %s cannot be scored: %s", session, exc)
        return TrialScoring(outcome="error", error=str(exc))
    try:
        await store.append(
            session, [score_event(s, score, judged) for s, score in scored],
            expected_seq=judged.last_seq,
        )  # fmt: skip
    except ConcurrencyError:
        log.info("trial %s was scored or grew meanwhile", session)
        return TrialScoring(outcome="grew")
    return TrialScoring(outcome="scored", scores={s.name: score for s, score in scored})


def _recorded_scores(events: Sequence[RecordedEvent]) -> dict[str, Score]:
    """The scores a trial has, by scorer (each scorer's newest version)."""
    return {
        name: Score(
            value=event.payload.get("score_value"),
            label=event.payload.get("score_label"),
            explanation=str(event.payload.get("explanation") or ""),
        )
        for (name, _), event in sorted(latest_scores(events).items())
    }
