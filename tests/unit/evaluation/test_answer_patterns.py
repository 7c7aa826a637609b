"""A suite's ``regex:`` answer is searched in bounded time and off the event loop: a pattern
that backtracks for hours (``^(a|a)+$`` on a string of ``a`` and a ``!``) is cut off after its
time limit with a verdict that says so, and the loop that serves the API keeps turning while
scorers judge. Python's ``re`` searched these in the event loop, for ever."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.evaluation.answer_patterns import PatternCutOff, compile_problem, pattern_found
from app.evaluation.scorers import Answer
from app.evaluation.scoring import ScoredSession, judge
from app.evaluation.suite import SuiteError, Task, suite_from_data
from app.events import AgentState, Finish, Message, SessionCreated
from tests.support.event_log import HandMadeLog

#: Exponential for any backtracking matcher (``re`` and ``regex`` alike) on ``a``*n + ``!``.
EXPONENTIAL = "^(a|a)+$"
ATTACK = "a" * 31 + "!"


def finished_with(message: str) -> HandMadeLog:
    log = HandMadeLog()
    log.add(SessionCreated(), Message(content="answer"))
    log.add(Finish(message=message, cause=2), AgentState(state="finished"))
    return log


def test_a_search_that_runs_past_its_limit_is_cut_off_in_about_that_time() -> None:
    started = time.monotonic()
    with pytest.raises(PatternCutOff, match=r"took longer than 0\.2 s"):
        pattern_found(EXPONENTIAL, ATTACK, seconds=0.2)
    assert time.monotonic() - started < 5  # re: hours
    # the pattern of the report is no work for this matcher; ordinary patterns still match
    assert pattern_found("^(a+)+$", ATTACK) is False
    assert pattern_found(r"\b42\b", "done: 42") is True


def test_the_answer_scorer_says_the_pattern_was_cut_off() -> None:
    task = Task(id="t", prompt="p", answer=f"regex:{EXPONENTIAL}")
    score = Answer().score(ScoredSession(finished_with(ATTACK).events, task))
    assert score is not None
    assert (score.value, score.label) == (0.0, "fail")
    assert score.explanation.startswith(f"the answer pattern {EXPONENTIAL!r} took longer than 1 s")
    assert score.explanation.endswith("; cut off")


async def test_scorers_judge_off_the_event_loop() -> None:
    task = Task(id="t", prompt="p", answer=f"regex:{EXPONENTIAL}")
    session = ScoredSession(finished_with(ATTACK).events, task)
    gaps: list[float] = []

    async def ticking() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(ticking())
    try:
        [(scorer, score)] = await judge([Answer()], session)
    finally:
        ticker.cancel()
    assert scorer.name == "answer" and score.explanation.endswith("cut off")
    assert len(gaps) > 20 and max(gaps) < 0.5, max(gaps)  # the loop kept turning


def test_a_pattern_that_does_not_compile_is_refused_naming_its_task() -> None:
    assert compile_problem(r"\b42\b") is None
    assert compile_problem("(unclosed") is not None
    suite = {"name": "s", "tasks": [{"id": "pick", "prompt": "x", "answer": "regex:a{2,1}"}]}
    with pytest.raises(SuiteError, match=r"task 'pick', field 'answer': regex 'a\{2,1\}'"):
        suite_from_data(suite)
