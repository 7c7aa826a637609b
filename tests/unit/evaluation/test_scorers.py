"""The built-in scorers on hand-made recordings, the ``eval.score`` event they become, and
finding a scorer by name (a built-in, or one written in Python as ``module:NAME``)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.evaluation.scorers import BUILTIN, Answer, Cost, Finished, Steps, scorer_named
from app.evaluation.scoring import (
    Score,
    ScoredSession,
    Scorer,
    ScoringError,
    evaluation_config,
    latest_scores,
    score_event,
)
from app.evaluation.suite import Task
from app.events import (
    AgentState,
    EvalScore,
    FileWrite,
    FileWriteOutput,
    Finish,
    LlmCall,
    LlmResponse,
    Message,
    SessionCreated,
    parse_event,
)
from app.events.evaluation import OTEL_ATTRIBUTES
from tests.support.event_log import HandMadeLog


def call(cost: float | None = 0.25, **fields: object) -> LlmCall:
    return LlmCall(model="m", fingerprint="f", cost_usd=cost, **fields)  # type: ignore[arg-type]


def session(
    *, finish: str | None = "done: 42", task: Task | None = None, run: str | None = None
) -> HandMadeLog:
    """created, a write and its answer, then finish (or a stop at the iteration limit)."""
    log = HandMadeLog()
    config = evaluation_config(run, task, 1) if run and task else {}
    log.add(SessionCreated(config=config), Message(content="do it"))
    log.add(call(0.25))
    log.add(FileWrite(path="a.py", content="x", cause=3))
    log.add(FileWriteOutput(path="a.py", cause=4))
    log.add(call(0.5))
    if finish is not None:
        log.add(Finish(message=finish, cause=6), AgentState(state="finished"))
    else:
        log.add(AgentState(state="stopped", reason="reached the iteration limit (2)"))
    return log


def scored(log: HandMadeLog, task: Task | None = None) -> ScoredSession:
    return ScoredSession(log.events, task)


def test_finished_passes_when_the_agent_called_finish() -> None:
    score = Finished().score(scored(session()))
    assert score == Score(value=1.0, label="pass", explanation="the agent called finish at seq 7")


def test_finished_fails_and_says_how_the_session_ended() -> None:
    score = Finished().score(scored(session(finish=None)))
    assert (score.value, score.label) == (0.0, "fail")
    assert score.explanation == (
        "the agent never called finish; the session ended stopped (reached the iteration limit (2))"
    )


def test_a_users_stop_is_not_the_agents_final_state() -> None:
    log = session(finish=None)
    log.add(AgentState(state="running", source="user"))
    assert scored(log).final_state == ("stopped", "reached the iteration limit (2)")


def task(answer: str | None) -> Task:
    return Task(id="t", prompt="p", answer=answer)


@pytest.mark.parametrize(
    ("answer", "message", "passed"),
    [
        ("done: 42", "  done: 42\n", True),
        ("done: 42", "done: 42!", False),
        ("regex:\\b42\\b", "done: 42", True),
        ("regex:^42", "done: 42", False),
        ("contains:42", "done: 42", True),
        ("contains:43", "done: 42", False),
    ],
)
def test_answer_compares_the_finish_message(answer: str, message: str, passed: bool) -> None:
    score = Answer().score(scored(session(finish=message), task(answer)))
    assert score is not None
    assert (score.value, score.label) == ((1.0, "pass") if passed else (0.0, "fail"))
    assert repr(message) in score.explanation
    assert ("does not" in score.explanation) is not passed


def test_answer_fails_without_finish_and_does_not_apply_without_an_expected_answer() -> None:
    score = Answer().score(scored(session(finish=None), task("42")))
    assert score == Score.verdict(False, "the agent never called finish, so it gave no answer")
    assert Answer().score(scored(session(), task(None))) is None
    assert Answer().score(scored(session())) is None


def test_the_task_recorded_in_the_session_is_the_default() -> None:
    log = session(task=task("regex:42"), run="nightly")
    recorded = scored(log)
    assert recorded.evaluation_run == "nightly"
    assert recorded.task == task("regex:42")
    score = Answer().score(recorded)
    assert score is not None and score.label == "pass"
    # A task given by the caller (a suite file, edited since) wins over the recorded one.
    score = Answer().score(scored(log, task("contains:43")))
    assert score is not None and score.label == "fail"


def test_cost_sums_exactly_and_leaves_out_failed_and_replayed_calls() -> None:
    log = session()
    log.add(call(0.1), call(None, error="boom"), call(0.3, replayed_from=2))
    score = Cost().score(scored(log))
    # 0.25 + 0.5 + 0.1 as decimals (floats would give 0.8500000000000001)
    assert score == Score(value=0.85, explanation="4 model calls cost $0.85")


def test_cost_counts_unpriced_calls_and_is_unknown_when_none_had_a_price() -> None:
    log = session()
    log.add(call(None))
    assert Cost().score(scored(log)).explanation == (
        "3 model calls cost $0.75; 1 had no price and are not counted"
    )
    unpriced = HandMadeLog()
    unpriced.add(SessionCreated(), call(None))
    assert Cost().score(scored(unpriced)) == Score(
        label="unpriced", explanation="none of the 1 model calls had a price"
    )


def test_steps_counts_the_agents_actions() -> None:
    assert Steps().score(scored(session())) == Score(
        value=2.0, explanation="2 actions over 2 model calls"
    )


def test_a_session_without_its_first_event_cannot_be_scored() -> None:
    log = HandMadeLog()
    log.add(Message(content="hi"))
    with pytest.raises(ScoringError, match=r"no session\.created"):
        ScoredSession(log.events)
    with pytest.raises(ScoringError, match=r"no session\.created"):
        ScoredSession([])


def test_a_recorded_task_that_does_not_validate_is_an_error() -> None:
    log = HandMadeLog()
    log.add(SessionCreated(config={"evaluation_task": {"id": "t"}}))
    with pytest.raises(ScoringError, match="evaluation_task is not a valid task"):
        ScoredSession(log.events)


def test_the_score_event_carries_the_otel_evaluation_fields() -> None:
    recorded = scored(session(task=task("42"), run="nightly"))
    event = score_event(Finished(), Finished().score(recorded), recorded)
    assert event.payload() == {
        "name": "finished",
        "scorer_version": 1,
        "score_value": 1.0,
        "score_label": "pass",
        "explanation": "the agent called finish at seq 7",
        "scored_seq": 8,
        "evaluation_run": "nightly",
    }
    assert event.source == "system"
    assert event.otel_attributes() == {
        "gen_ai.evaluation.name": "finished",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "the agent called finish at seq 7",
    }
    assert set(OTEL_ATTRIBUTES.values()) == {
        "gen_ai.evaluation.name",
        "gen_ai.evaluation.score.value",
        "gen_ai.evaluation.score.label",
        "gen_ai.evaluation.explanation",
    }
    parsed = parse_event({"kind": "eval.score", **event.payload()})
    assert isinstance(parsed, EvalScore) and parsed.payload() == event.payload()


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "", "scorer_version": 1, "scored_seq": 1},
        {"name": "x", "scorer_version": 0, "scored_seq": 1},
        {"name": "x", "scorer_version": 1, "scored_seq": 0},
        {"name": "x", "scorer_version": 1, "scored_seq": 1, "score_value": float("nan")},
        {"name": "x", "scorer_version": 1, "scored_seq": 1, "score_value": float("inf")},
        {"name": "x", "scorer_version": 1, "scored_seq": 1, "surprise": 1},
    ],
)
def test_a_bad_score_event_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        EvalScore.model_validate(fields)


def test_the_newest_score_per_scorer_version_counts() -> None:
    log = session()
    _, other, newer, v2 = log.add(
        EvalScore(name="finished", scorer_version=1, score_value=0.0, scored_seq=8),
        EvalScore(name="steps", scorer_version=1, score_value=2.0, scored_seq=8),
        EvalScore(name="finished", scorer_version=1, score_value=1.0, scored_seq=8),
        EvalScore(name="finished", scorer_version=2, score_value=1.0, scored_seq=8),
    )
    assert latest_scores(log.events) == {
        ("finished", 1): newer,
        ("steps", 1): other,
        ("finished", 2): v2,
    }


def test_builtin_scorers_by_name() -> None:
    assert {"finished", "answer", "cost", "steps", "check"} <= set(BUILTIN)
    assert all(isinstance(scorer, Scorer) for scorer in BUILTIN.values())
    assert scorer_named("steps") is BUILTIN["steps"]
    assert scorer_named("check") is BUILTIN["check"]  # an I/O scorer, registered as the others
    with pytest.raises(ScoringError, match="no scorer named 'chek'; the built-in scorers are"):
        scorer_named("chek")


SCORER_MODULE = """
from app.evaluation.scoring import Score

class Says42:
    name = "says_42"
    version = 3

    def score(self, session):
        return Score.verdict("42" in (session.finish_message or ""), "looked for 42")

instance = Says42()
not_a_scorer = object()

class NoVersion:
    name = "x"
    def score(self, session):
        return None
"""


def test_a_scorer_written_in_python_is_found_by_module_and_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"my_scorers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(SCORER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        for name in (f"{module}:Says42", f"{module}:instance"):
            scorer = scorer_named(name)
            assert (scorer.name, scorer.version) == ("says_42", 3)
            assert scorer.score(scored(session())) == Score.verdict(True, "looked for 42")
        with pytest.raises(ScoringError, match="is not a scorer"):
            scorer_named(f"{module}:not_a_scorer")
        with pytest.raises(ScoringError, match="is not a scorer"):
            scorer_named(f"{module}:NoVersion")
        with pytest.raises(ScoringError, match=f"the module '{module}' has no 'missing'"):
            scorer_named(f"{module}:missing")
        with pytest.raises(ScoringError, match="cannot import the scorer module 'no_such_mod"):
            scorer_named("no_such_mod_xyz:Thing")
    finally:
        sys.modules.pop(module, None)


def external_session(*replies: str, state: str = "finished", reason: str = "") -> HandMadeLog:
    """A recorded outside agent's session: its model calls, then its command's end."""
    log = HandMadeLog()
    log.add(SessionCreated(config={"agent": "external", "command": ["agent"]}))
    log.add(AgentState(state="running", reason="running agent"))
    for reply in replies:
        log.add(call(0.25, response=LlmResponse(content=reply)))
    log.add(AgentState(state=state, reason=reason, exit_code=0 if state == "finished" else 3))
    return log


def test_an_outside_agent_finishes_by_exiting_zero_and_answers_with_its_last_reply() -> None:
    """It calls no finish: its command's exit says whether it finished, and its model's last
    reply is what the task's answer is compared with."""
    done = scored(external_session("thinking", "done: 42", reason="exited 0"), task("regex:42"))
    assert Finished().score(done) == Score.verdict(True, "exited 0")
    answer = Answer().score(done)
    assert answer is not None and answer.label == "pass" and "'done: 42'" in answer.explanation
    failed = scored(external_session("41", state="error", reason="exited with code 3"))
    assert Finished().score(failed) == Score.verdict(False, "exited with code 3")
    silent = scored(external_session(), task("42"))
    assert Answer().score(silent) == Score.verdict(
        False, "the agent's model never answered, so it gave no answer"
    )
