"""Scoring recorded sessions again and recording each score as an ``eval.score`` event.

Nothing here calls a model: a session is read from the log, the scorers judge it (an I/O
scorer such as ``check`` in a sandbox of its own, one session at a time), and their scores
are appended to it in one append after the events judged. Re-scoring appends new scores; the
old ones stay in the log, and the newest per scorer and version counts (``latest_scores``).
Sessions are read a batch at a time in one query, and their scores appended together, so
re-scoring a thousand sessions costs a few reads and the appends the store's group commit
makes of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.config import Settings
from app.evaluation.scoring import (
    Score,
    ScoredSession,
    Scorer,
    ScoringContext,
    ScoringError,
    judge,
    score_event,
)
from app.evaluation.sql.evaluation_rows import evaluation_run_sessions, read_sessions
from app.evaluation.suite import Suite, Task
from app.projections import ProjectionsConfig, SessionState, bring_up_to_date
from app.store import ConcurrencyError, EventStore, RecordedEvent

#: Sessions read in one query, then scored.
BATCH = 250
#: Appends in flight at once (they share round trips through the store's group commit); one
#: when a scorer needs I/O (each ``check`` runs a sandbox).
CONCURRENCY = 64
#: How often a session that grew while it was scored is read and scored again.
RETRIES = 3


class ScoredResult(BaseModel):
    """What the scorers said of one session, as recorded (scorer name -> score)."""

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    task_id: str | None
    evaluation_run: str | None
    scored_seq: int = 0
    scores: dict[str, Score]
    #: why the session could not be scored (nothing was recorded on it)
    error: str | None = None


async def sessions_to_score(
    store: EventStore, targets: Sequence[str], config: ProjectionsConfig | None = None
) -> list[UUID]:
    """Each target as the session it names (a UUID) or the sessions of the evaluation run of
    that name, in order, without repeats."""
    found: list[UUID] = []
    looked_up = False
    for target in targets:
        try:
            ids = [UUID(target)]
        except ValueError:
            if not looked_up:
                await bring_up_to_date(store, SessionState(), config)
                looked_up = True
            ids = await evaluation_run_sessions(store, target)
            if not ids:
                raise ScoringError(
                    f"no evaluation run is named {target!r} (and it is not a session id); "
                    "`chronicle sessions` lists sessions, with their evaluation run"
                ) from None
        found.extend(i for i in ids if i not in found)
    return found


def suite_tasks(suite: Suite | None, answer: str | None) -> Callable[[ScoredSession], Task | None]:
    """Which task a session is judged against: the suite's task of the id it recorded (the
    suite may have been edited since), else an ad-hoc task expecting ``answer``, else the
    task the session recorded."""

    def task_for(session: ScoredSession) -> Task | None:
        if suite is not None and session.task is not None:
            edited = suite.task(session.task.id)
            if edited is not None:
                return edited
        if answer is not None and session.task is None:
            return Task(id="answer", prompt="(given on the command line)", answer=answer)
        return session.task

    return task_for


async def score_session(
    store: EventStore,
    session_id: UUID,
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None] = lambda session: session.task,
    *,
    settings: Settings | None = None,
) -> ScoredResult:
    """Score one session and append the scores, as of its last event; a session that grew
    meanwhile (its agent still running) is read and scored again. ``settings``: what an I/O
    scorer needs (``ScoringContext``)."""
    for _ in range(RETRIES):
        events = await store.read(session_id)
        result = await _score_events(store, session_id, events, scorers, task_for, settings)
        if result is not None:
            return result
    raise ScoringError(
        f"session {session_id} kept growing while it was scored ({RETRIES} tries); "
        "score it once its agent has stopped"
    )


async def rescore(
    store: EventStore,
    session_ids: Sequence[UUID],
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None] = lambda session: session.task,
    *,
    settings: Settings | None = None,
) -> list[ScoredResult]:
    """Score every session; results in the order given. A session that cannot be scored has
    its ``error`` said in its result, and the others are scored. ``settings``: what an I/O
    scorer needs (``ScoringContext``).

    Sessions are read ``BATCH`` at a time in one query each, and their scores appended
    together (the store's group commit sends appends that wait together in one round trip);
    a session that grew since it was read is scored again on its own (``score_session``).
    """
    results: dict[UUID, ScoredResult] = {}
    limit = asyncio.Semaphore(CONCURRENCY if all(s.pure for s in scorers) else 1)

    async def one(session_id: UUID, events: list[RecordedEvent]) -> ScoredResult:
        async with limit:
            try:
                return await _score_read(store, session_id, events, scorers, task_for, settings)
            except ScoringError as exc:
                return ScoredResult(
                    session_id=session_id, task_id=None, evaluation_run=None, scores={},
                    error=str(exc),
                )  # fmt: skip

    for start in range(0, len(session_ids), BATCH):
        batch = list(dict.fromkeys(session_ids[start : start + BATCH]))
        read = await read_sessions(store, batch)
        scored = await asyncio.gather(*(one(i, read.get(i, [])) for i in batch))
        results.update((result.session_id, result) for result in scored)
    return [results[session_id] for session_id in session_ids]


async def _score_read(
    store: EventStore,
    session_id: UUID,
    events: list[RecordedEvent],
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None],
    settings: Settings | None,
) -> ScoredResult:
    """Score a session from the events already read; if it grew since, read it again."""
    result = await _score_events(store, session_id, events, scorers, task_for, settings)
    if result is None:
        return await score_session(store, session_id, scorers, task_for, settings=settings)
    return result


async def _score_events(
    store: EventStore,
    session_id: UUID,
    events: list[RecordedEvent],
    scorers: Sequence[Scorer],
    task_for: Callable[[ScoredSession], Task | None],
    settings: Settings | None,
) -> ScoredResult | None:
    """Score the session as of ``events`` and append the scores after its last one; None when
    the session grew since (the append was refused: nothing written)."""
    if not events:
        raise ScoringError(f"session {session_id} has no events: nothing to score")
    session = ScoredSession(events)
    recorded_task = session.task
    session.task = task_for(session)
    recorded = await judge(scorers, ScoringContext(session, settings))
    try:
        await store.append(
            session_id,
            [score_event(scorer, score, session) for scorer, score in recorded],
            expected_seq=session.last_seq,
        )
    except ConcurrencyError:
        return None
    return ScoredResult(
        session_id=session_id,
        task_id=recorded_task.id if recorded_task else None,
        evaluation_run=session.evaluation_run,
        scored_seq=session.last_seq,
        scores={scorer.name: score for scorer, score in recorded},
    )
