"""The one async scorer protocol: a pure scorer is judged off the event loop as written, an
I/O scorer gets what its context gives it, and both are found through the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.evaluation.check import Check
from app.evaluation.scorers import BUILTIN, scorer_named
from app.evaluation.scoring import (
    PureScorer,
    Score,
    ScoredSession,
    Scorer,
    ScoringContext,
    ScoringError,
    judge,
    score_event,
)
from app.evaluation.suite import Task
from app.events import AgentState, Finish, Message, SessionCreated
from app.events.session_config import EvaluationTrial
from tests.support.event_log import HandMadeLog
from tests.support.toy_scorers import ReadmeWritten

TOY = "tests.support.toy_scorers:ReadmeWritten"


def finished(task: Task | None = None) -> ScoredSession:
    log = HandMadeLog()
    config = EvaluationTrial(run="r", task=task.model_dump(mode="json"), epoch=1) if task else None
    log.add(SessionCreated(config=config.model_dump(mode="json") if config else {}))
    log.add(Message(content="do it"), Finish(message="done: 42"), AgentState(state="finished"))
    return ScoredSession(log.events)


class Says42(PureScorer):
    name = "says_42"
    version = 2

    def score(self, session: ScoredSession) -> Score | None:
        return Score.verdict("42" in (session.finish_message or ""), "looked for 42")


class NeverApplies(PureScorer):
    name = "never"
    version = 1

    def score(self, session: ScoredSession) -> Score | None:
        return None


async def test_a_pure_scorer_is_judged_as_its_score_says_and_in_the_order_given() -> None:
    session = finished()
    judged = await judge([NeverApplies(), Says42(), BUILTIN["steps"]], ScoringContext(session))
    assert [scorer.name for scorer, _ in judged] == ["says_42", "steps"]
    assert judged[0][1] == Says42().score(session) == Score.verdict(True, "looked for 42")
    assert all(isinstance(scorer, Scorer) and scorer.pure for scorer, _ in judged)


async def test_a_toy_io_scorer_named_by_module_gets_the_trials_workspace(tmp_path: Path) -> None:
    scorer = scorer_named(TOY)
    assert isinstance(scorer, Scorer) and not scorer.pure
    session = finished()
    assert await judge([scorer], ScoringContext(session)) == []  # no workspace: later, offline
    [(_, missing)] = await judge([scorer], ScoringContext(session, workspace=tmp_path))
    (tmp_path / "README.md").write_text("hello")
    [(_, written)] = await judge([scorer], ScoringContext(session, workspace=tmp_path))
    assert (missing.label, written.label) == ("fail", "pass")
    assert score_event(scorer, written, session).name == "readme_written"


def test_a_toy_io_scorer_registered_is_found_by_its_name() -> None:
    registry = {**BUILTIN, ReadmeWritten.name: ReadmeWritten()}
    assert scorer_named("readme_written", registry) is registry["readme_written"]
    with pytest.raises(ScoringError, match="no scorer named 'readme_written'"):
        scorer_named("readme_written")  # not a built-in


async def test_check_applies_to_a_task_with_a_check_and_needs_the_settings() -> None:
    assert await Check().judge(ScoringContext(finished(Task(id="t", prompt="p")))) is None
    with_check = finished(Task(id="t", prompt="p", check="true"))
    with pytest.raises(ScoringError, match="needs the settings"):
        await Check().judge(ScoringContext(with_check))


def test_a_scores_own_version_is_recorded_when_the_scorer_says_which_it_used() -> None:
    session = finished()
    live = Score.verdict(True, "ran").model_copy(update={"scorer_version": 1})
    assert score_event(Check(), live, session).scorer_version == 1
    assert score_event(Check(), Score.verdict(True, "ran"), session).scorer_version == 2
    assert "scorer_version" not in live.model_dump()  # not part of the score as shown
