"""Regression testing without the model: replay every trial of an evaluation run against the
current agent code (or a changed configuration) and say, per task, matched or where it first
diverged.

Each replay is app/replay's (``replay(store, session_id, agent_config, mode=...)``): a session
of its own whose model calls are served from the recording, so no model is called. The
replays of one ``chronicle eval replay`` form a replay run, named by ``--name``: each replay
session gets a ``replay`` score (pass when it matched, with the divergence in words
otherwise) whose ``evaluation_run`` is that name, which is how the report views find it
(``evaluation_sessions``, ``evaluation_replays``), and the default scorers' scores.

An I/O scorer (one that is not pure, such as the task's ``check``) is not run on a replay: a
replay touches no sandbox. When the replay matched, its agent took the recorded actions and
got the recorded observations, so its final workspace is the recording's: the recorded
verdicts of the I/O scorers are carried over (said so in their explanations). A diverged
replay gets none; its ``replay`` verdict fails it.

A trial of an agent command (``external_agent``) is replayed by running its command again in
a fresh workspace with the gateway serving the recorded answers (``external_replay``); that
replay made a real workspace, so a matched one has the I/O scorers judge it there instead.

A trial whose session was erased, or redacted where a replay needs it, is counted apart
(``excluded``), not as a divergence or an error (``exclusions.py``): a replay stopped at a
``redacted`` divergence is recorded and tagged as any other, and the run's report sets it
apart; one that cannot start (the session is gone, or its configuration was redacted) records
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.config import Settings
from app.evaluation.exclusions import REDACTED
from app.evaluation.rescoring import score_session
from app.evaluation.scoring import (
    ScoredSession,
    Scorer,
    ScoringContext,
    ScoringError,
    judge,
    latest_scores,
    score_event,
)
from app.evaluation.sql.erased_trials import tombstone_of
from app.events import EvalScore
from app.replay import (
    AgentConfig,
    RedactedReplayError,
    ReplayError,
    ReplayMode,
    ReplayResult,
    replay,
)
from app.store import EventStore, RecordedEvent

NAME = "replay"
VERSION = 1


class ReplayedTrial(BaseModel):
    """One trial of the run, replayed: matched, or the first divergence (step and kind)."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    epoch: int
    recorded: UUID
    replay: UUID | None
    matched: bool
    steps_matched: int = 0
    steps_recorded: int = 0
    step: int | None = None
    kind: str | None = None
    divergence: str | None = None
    model_calls: int = 0
    #: why the trial could not be replayed
    error: str | None = None
    #: counted apart (``erased`` or ``redacted``), with why in ``divergence``
    excluded: Literal["erased", "redacted"] | None = None


async def replay_trial(
    store: EventStore,
    run: str,
    task_id: str,
    epoch: int,
    session_id: UUID,
    agent_config: AgentConfig,
    mode: ReplayMode,
    scorers: Sequence[Scorer],
) -> ReplayedTrial:
    """Replay one recorded trial, tag the replay with the replay run ``run`` and score it."""
    trial = ReplayedTrial(task_id=task_id, epoch=epoch, recorded=session_id, replay=None,
                          matched=False)  # fmt: skip
    try:
        result = await replay(store, session_id, agent_config, mode=mode)
    except RedactedReplayError as exc:
        return trial.model_copy(update={"excluded": REDACTED, "divergence": str(exc)})
    except ReplayError as exc:
        erased = await tombstone_of(store, session_id)
        if erased is not None:
            return trial.model_copy(update={"excluded": "erased", "divergence": erased.describe()})
        return trial.model_copy(update={"error": str(exc)})
    return await record_replay(store, run, trial, result, scorers)


async def record_replay(
    store: EventStore,
    run: str,
    trial: ReplayedTrial,
    result: ReplayResult,
    scorers: Sequence[Scorer],
    *,
    settings: Settings | None = None,
    workspace: Path | None = None,
    runtime: str | None = None,
) -> ReplayedTrial:
    """Tag the replay ``result`` of ``trial`` with the replay run ``run`` and score it; a
    matched replay's I/O scorers judge its own ``workspace`` (an agent command's replay made
    one, in ``runtime``), else the recording's verdicts are carried over."""
    session_id = trial.recorded
    divergence = result.divergence
    summary = divergence.summary if divergence is not None else None
    if divergence is None and result.differences:
        summary = f"{len(result.differences)} request differences (served anyway)"
    explanation = (
        f"matched the recording ({result.steps_matched} of {result.steps_recorded} model calls)"
        if result.matched
        else f"diverged: {summary or f'ended {result.outcome}'}"
    )
    last = await store.last_seq(result.session_id)
    tags = [
        EvalScore(
            name=NAME, scorer_version=VERSION, score_value=1.0 if result.matched else 0.0,
            score_label="pass" if result.matched else "fail", explanation=explanation,
            scored_seq=last, evaluation_run=run,
        )
    ]  # fmt: skip
    sandboxed = [scorer for scorer in scorers if not scorer.pure]
    if result.matched and sandboxed and workspace is not None:
        replayed = ScoredSession(await store.read(result.session_id))
        context = ScoringContext(replayed, settings, workspace, runtime)
        tags += [
            score_event(scorer, score, replayed).model_copy(
                update={"scored_seq": last, "evaluation_run": run}
            )
            for scorer, score in await judge(sandboxed, context)
        ]
    elif result.matched:
        names = {scorer.name for scorer in sandboxed}
        tags += _carried(await store.read(session_id), names, session_id, run, last)
    await store.append(result.session_id, tags)
    try:
        await score_session(store, result.session_id, [s for s in scorers if s.pure])
    except ScoringError as exc:
        return trial.model_copy(update={"replay": result.session_id, "error": str(exc)})
    return trial.model_copy(
        update={
            "replay": result.session_id,
            "matched": result.matched,
            "steps_matched": result.steps_matched,
            "steps_recorded": result.steps_recorded,
            "step": divergence.step if divergence is not None else None,
            "kind": divergence.kind if divergence is not None else None,
            "divergence": summary,
            "model_calls": result.model_calls,
            "excluded": REDACTED
            if divergence is not None and divergence.kind == REDACTED
            else None,
        }
    )


def _carried(
    events: Sequence[RecordedEvent], names: set[str], recorded: UUID, run: str, last_seq: int
) -> list[EvalScore]:
    """The recorded trial's verdict that counts of each scorer named, for a replay that
    matched it (its newest version's)."""
    scores = latest_scores(events)
    carried = []
    for name in sorted(names):
        versions = sorted(key for key in scores if key[0] == name)
        if not versions:
            continue
        counted = scores[versions[-1]].payload
        carried.append(EvalScore(
            name=name, scorer_version=versions[-1][1], score_value=counted.get("score_value"),
            score_label=counted.get("score_label"),
            explanation=f"carried over from the recorded session {recorded}, which this replay "
            f"matched action for action: {counted.get('explanation', '')}",
            scored_seq=last_seq, evaluation_run=run,
        ))  # fmt: skip
    return carried
