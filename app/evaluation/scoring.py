"""What a scorer is, what it is given, and the recorded session it reads.

Every scorer is one async protocol (``Scorer``): a ``name``, a ``version`` (bump it when the
scorer judges differently, so old and new scores are never mixed) and ``judge(context) ->
Score | None`` (None: the scorer does not apply, e.g. the task has no expected answer; nothing
is recorded). The ``ScoringContext`` gives it what it may use: the recorded session, the
settings (a sandbox's configuration) and, for a trial scored as it ends, the trial's own final
workspace and runtime. Recording the score as an ``eval.score`` event is the caller's business
(``app/evaluation/trials.py`` for a trial, ``app/evaluation/rescoring.py`` for re-scoring).

Most scorers are pure: they read the log and nothing else, so a session can be scored again at
any time, offline, with the same result. Such a scorer subclasses ``PureScorer`` and writes a
plain ``score(session) -> Score | None``; its ``judge`` runs that in a thread. A scorer that
needs I/O (``check`` runs a command in a fresh sandbox) writes ``judge`` itself and says
``pure = False``, which keeps re-scoring from running many at once and a matched replay from
running it again (the recorded verdict is carried over). The built-in scorers are registered
in one place, ``app/evaluation/scorers.py``; your own is named on the command line as
``--scorer package.module:NAME`` (an importable object or a class taking no arguments; an
object with only ``name``, ``version`` and ``score(session)`` is taken as a pure scorer)::

    class MentionsTests(PureScorer):
        name = "mentions_tests"
        version = 1

        def score(self, session: ScoredSession) -> Score | None:
            said = session.finish_message or ""
            return Score.verdict("test" in said, explanation="the finish message ...")
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.config import Settings
from app.errors import ChronicleError
from app.evaluation.suite import Task
from app.events import ACTION_KINDS, EvalScore
from app.events.session_config import EvaluationTrial, SessionConfig
from app.store import RecordedEvent


class ScoringError(ChronicleError, ValueError):
    """A session cannot be scored; the message says which and why."""


class Score(BaseModel):
    """A scorer's verdict: a value (1.0 / 0.0 for pass / fail, or a measure such as cost), a
    low-cardinality label (``pass`` / ``fail``) and why, in words."""

    model_config = ConfigDict(frozen=True)

    value: float | None = None
    label: str | None = None
    explanation: str = ""
    #: the version recorded when it is not the scorer's own: a scorer whose method depends on
    #: what the context gave it (``check``: 1 on the trial's own workspace, 2 on one rebuilt
    #: from the log) says which it used; not part of the score as shown
    scorer_version: int | None = Field(default=None, exclude=True)

    @classmethod
    def verdict(cls, passed: bool, explanation: str) -> Score:
        return cls(value=1.0 if passed else 0.0, label="pass" if passed else "fail",
                   explanation=explanation)  # fmt: skip


@runtime_checkable
class Scorer(Protocol):
    """Anything with a name, a version and an async ``judge`` (see the module)."""

    name: str
    version: int
    #: whether it reads nothing but the log (see the module)
    pure: bool

    async def judge(self, context: ScoringContext) -> Score | None: ...


class PureScorer:
    """A scorer that reads the recorded session and nothing else: write ``score``."""

    name: str
    version: int
    pure = True

    def score(self, session: ScoredSession) -> Score | None:
        raise NotImplementedError

    async def judge(self, context: ScoringContext) -> Score | None:
        """``score`` in a thread: a scorer is code over text the suite's author or the agent
        chose (an answer pattern, a long finish message) and must not stall the event loop
        that serves the API and streams meanwhile. The built-in scorers are bounded in time
        (``answer_patterns``)."""
        return await asyncio.to_thread(self.score, context.session)


class ScoredSession:
    """A recorded session as scorers read it: its events, and what they say once, derived
    here so every scorer reads the same facts the same way."""

    def __init__(self, events: Sequence[RecordedEvent], task: Task | None = None) -> None:
        if not events or events[0].kind != "session.created":
            raise ScoringError("the session has no session.created event: nothing to score")
        self.events = list(events)
        self.session_id: UUID = events[0].session_id
        try:
            self.config = SessionConfig.of_payload(events[0].payload)
        except ValidationError as exc:
            raise ScoringError(
                f"the session's recorded configuration is not valid: {exc}"
            ) from None
        trial = self.config.evaluation
        self.evaluation_run: str | None = trial.run if trial is not None else None
        self.task: Task | None = task if task is not None else _recorded_task(trial)
        self.last_seq: int = events[-1].seq

    @property
    def finish(self) -> RecordedEvent | None:
        """The agent's last ``finish`` action (None: it never called finish)."""
        return next(
            (e for e in reversed(self.events) if e.kind == "finish" and e.source == "agent"),
            None,
        )

    @property
    def finish_message(self) -> str | None:
        finish = self.finish
        if finish is None:
            return None
        message = finish.payload.get("message")
        return message if isinstance(message, str) else ""

    @property
    def external(self) -> bool:
        """A session of an agent Chronicle does not run (``chronicle record``, an evaluation
        task's ``agent`` command): it calls no ``finish``; its command's end says how it
        ended, and its model's last reply is its answer."""
        return self.config.agent == "external"

    @property
    def final_reply(self) -> str | None:
        """The text of the last model call's answer (None: no call was answered)."""
        for call in reversed(self.model_calls):
            response = call.payload.get("response")
            if call.payload.get("error") is None and isinstance(response, dict):
                content = response.get("content")
                return content if isinstance(content, str) else ""
        return None

    @property
    def final_state(self) -> tuple[str | None, str]:
        """The controller's last state and its reason (a user's steering is not one)."""
        for event in reversed(self.events):
            if event.kind == "agent.state" and event.source == "agent":
                return str(event.payload.get("state")), str(event.payload.get("reason") or "")
        return None, ""

    @property
    def model_calls(self) -> list[RecordedEvent]:
        """Calls this session made to a model (a replay's served calls made none)."""
        return [
            e
            for e in self.events
            if e.kind == "llm.call" and e.payload.get("replayed_from") is None
        ]

    @property
    def steps(self) -> int:
        """The agent's actions, as ``session_state.steps`` counts them."""
        return sum(1 for e in self.events if e.kind in ACTION_KINDS and e.source == "agent")

    def cost(self) -> tuple[Decimal | None, int]:
        """The exact cost of the session's model calls and how many had no price; the cost
        is None when no call had a price and some had none (never a misleading zero)."""
        total, priced, unpriced = Decimal(0), 0, 0
        for call in self.model_calls:
            cost = call.payload.get("cost_usd")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                total += Decimal(repr(cost)) if isinstance(cost, float) else Decimal(cost)
                priced += 1
            elif call.payload.get("error") is None:
                unpriced += 1
        return (None if priced == 0 and unpriced else total), unpriced


@dataclass(frozen=True)
class ScoringContext:
    """What a scorer is given: the session, and what an I/O scorer needs besides it."""

    session: ScoredSession
    #: the app's settings (None: scoring without them, which only pure scorers can do)
    settings: Settings | None = None
    #: the trial's own final workspace when it is scored as it ends (None: later, from the log)
    workspace: Path | None = None
    #: the runtime kind an I/O scorer's sandbox runs in: the trial's run's (None: the default
    #: kind; later, from the log: the session's recorded one)
    runtime: str | None = None


async def judge(
    scorers: Sequence[Scorer], context: ScoringContext | ScoredSession
) -> list[tuple[Scorer, Score]]:
    """Each scorer's score of the session (those that apply), in the order given, each
    judged as it says (a pure one in a thread, off the event loop: ``PureScorer``)."""
    if isinstance(context, ScoredSession):
        context = ScoringContext(context)
    return [(s, score) for s in scorers if (score := await s.judge(context)) is not None]


def _recorded_task(trial: EvaluationTrial | None) -> Task | None:
    if trial is None or trial.task is None:
        return None
    try:
        return Task.model_validate(trial.task)
    except ValidationError as exc:
        key = EvaluationTrial.stored_key("task")
        raise ScoringError(f"the session's recorded {key} is not a valid task: {exc}") from None


def evaluation_trial(run: str, task: Task, epoch: int) -> EvaluationTrial:
    """What a session run for an evaluation records in its ``session.created`` config."""
    return EvaluationTrial(run=run, task=task.model_dump(mode="json"), epoch=epoch)


def evaluation_config(run: str, task: Task, epoch: int) -> dict[str, Any]:
    """``evaluation_trial``'s keys as ``session.created``'s config stores them."""
    return evaluation_trial(run, task, epoch).model_dump(mode="json")


def score_event(scorer: Scorer, score: Score, session: ScoredSession) -> EvalScore:
    """The ``eval.score`` event recording ``score`` on ``session``."""
    return EvalScore(
        name=scorer.name,
        scorer_version=score.scorer_version or scorer.version,
        score_value=score.value,
        score_label=score.label,
        explanation=score.explanation,
        scored_seq=session.last_seq,
        evaluation_run=session.evaluation_run,
    )


def latest_scores(events: Sequence[RecordedEvent]) -> dict[tuple[str, int], RecordedEvent]:
    """The newest ``eval.score`` per (scorer, version): the one that counts."""
    latest: dict[tuple[str, int], RecordedEvent] = {}
    for event in events:
        if event.kind == "eval.score":
            key = (str(event.payload.get("name")), int(event.payload.get("scorer_version", 1)))
            latest[key] = event
    return latest
