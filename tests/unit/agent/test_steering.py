"""The steering table (issue 23, item 3): which of pause, stop and resume applies in which
phase, the phase a session's log puts it in, the 409's sentence, and when a run has nothing
to do (item 5: a second run after a message its first run read)."""

from __future__ import annotations

import uuid

import pytest

from app.agent.steering import (
    PAUSED_BY_USER,
    STOPPED_BY_USER,
    Phase,
    StateMark,
    Steering,
    SteeringMarks,
    applicable,
    idle_answer,
    idle_outcome,
    needs_run,
    phase_of,
    phase_shown,
    refusal,
)

SESSION = uuid.UUID(int=7)
LIMIT = "reached the iteration limit (3); raise --max-iterations and resume to continue"


def marks(
    state: tuple[int, str, str] | tuple[int, str] | None = None,
    request: tuple[int, str] | None = None,
    message: int | None = None,
    *,
    running: bool = False,
    last_seq: int = 50,
) -> SteeringMarks:
    said = None
    if state is not None:
        said = StateMark(seq=state[0], state=state[1], reason=(*state, "")[2])
    return SteeringMarks(
        last_seq=last_seq,
        state=said,
        request=StateMark(seq=request[0], state=request[1]) if request else None,
        message_seq=message,
        running=running,
    )


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("running", ["pause", "stop"]),
        ("interrupted", ["resume"]),
        ("pausing", ["stop", "resume"]),
        ("paused", ["stop", "resume"]),
        ("stopping", ["resume"]),
        ("stopped", ["resume"]),
        ("error", ["resume"]),
        ("limit", []),
        ("awaiting_user_input", []),
        ("finished", []),
    ],
)
def test_the_table(phase: Phase, expected: list[Steering]) -> None:
    assert applicable(phase) == expected
    for steering in ("pause", "stop", "resume"):
        assert (refusal(SESSION, steering, phase) is None) is (steering in expected)


@pytest.mark.parametrize(
    ("given", "phase"),
    [
        # nothing said yet: a run is on its way, or nobody will run it
        (marks(running=True), "running"),
        (marks(), "interrupted"),
        (marks((3, "running"), message=2, running=True), "running"),
        (marks((3, "rate_limited"), message=2), "interrupted"),
        # the agent ended; the user sent nothing it has not seen
        (marks((9, "finished"), message=2, running=True), "finished"),
        (marks((9, "awaiting_user_input"), message=2), "awaiting_user_input"),
        (marks((9, "error", "the model call failed"), message=2), "error"),
        (marks((9, "stopped", LIMIT), message=2), "limit"),
        # a message it has not seen continues it, a resume too when it failed
        (marks((9, "finished"), message=10, running=True), "running"),
        (marks((9, "awaiting_user_input"), message=10, running=True), "running"),
        (marks((9, "error"), (10, "running"), 2, running=True), "running"),
        # not a finished one: a resume does not continue it, nor one at its limit
        (marks((9, "finished"), (10, "running"), 2, running=True), "finished"),
        (marks((9, "stopped", LIMIT), message=10, running=True), "limit"),
        # the user's pause and stop: asked, then answered; they hold until a resume
        (marks((5, "running"), (6, "paused"), 2, running=True), "pausing"),
        (marks((7, "paused", PAUSED_BY_USER), (6, "paused"), 2), "paused"),
        (marks((7, "paused", PAUSED_BY_USER), (6, "paused"), 9), "paused"),
        (marks((7, "paused", PAUSED_BY_USER), (8, "stopped"), 2), "stopping"),
        (marks((9, "stopped", STOPPED_BY_USER), (8, "stopped"), 12), "stopped"),
        (marks((7, "paused", PAUSED_BY_USER), (8, "running"), 2, running=True), "running"),
        # stopped by the process (a drain, Ctrl-C), not by the user: cut short
        (marks((9, "stopped", "interrupted by SIGINT"), message=2), "interrupted"),
        (marks((9, "stopped", "the worker is shutting down"), message=2, running=True), "running"),
    ],
)
def test_the_phase_of_a_log(given: SteeringMarks, phase: Phase) -> None:
    assert phase_of(given) == phase


def test_the_phase_as_the_list_shows_it() -> None:
    assert phase_shown(None) == "running"  # not started yet
    assert phase_shown("running") == "running"
    assert phase_shown("interrupted") == "interrupted"
    assert phase_shown("limit") == "limit"
    assert phase_shown("finished") == "finished"
    assert phase_shown("something new") == "error"


def test_a_refusal_says_what_the_state_is_and_what_to_do() -> None:
    assert refusal(SESSION, "stop", "finished") == (
        f"session {SESSION} is finished; stop applies only to a running or paused session"
    )
    assert refusal(SESSION, "resume", "finished") == (
        f"session {SESSION} is finished; resume applies only to a paused, stopped, "
        "interrupted or failed session; send it a message to continue it"
    )
    assert refusal(SESSION, "resume", "running") == (
        f"session {SESSION} is running; resume applies only to a paused, stopped, "
        "interrupted or failed session"
    )
    limit = refusal(SESSION, "resume", "limit")
    assert limit is not None and f"chronicle resume {SESSION} --max-iterations N" in limit
    assert "resume it to let it go on" in (refusal(SESSION, "pause", "interrupted") or "")
    assert "a pause was asked already" in (refusal(SESSION, "pause", "pausing") or "")


def test_a_resume_and_a_stop_of_a_paused_session_ask_for_a_run() -> None:
    assert needs_run("resume", "paused") and needs_run("resume", "error")
    assert needs_run("stop", "paused")
    assert not needs_run("stop", "running") and not needs_run("stop", "pausing")
    assert not needs_run("pause", "running")


def test_a_run_with_nothing_to_do_ends_at_once() -> None:
    # item 5: the first run read the message and finished; the second has nothing to do
    read = marks((9, "finished"), message=4, running=True)
    assert idle_outcome(read, limits_as_recorded=True) == "finished"
    unread = marks((9, "finished"), message=10, running=True)
    assert idle_outcome(unread, limits_as_recorded=True) is None
    assert idle_outcome(marks(running=True), limits_as_recorded=True) is None  # a new session
    paused = marks((7, "paused", PAUSED_BY_USER), (6, "paused"), 9, running=True)
    assert idle_outcome(paused, limits_as_recorded=True) == "paused"
    # a failed one is tried again; one at its limit only with higher limits
    failed = marks((9, "error", "the model call failed"), message=2, running=True)
    assert idle_outcome(failed, limits_as_recorded=True) is None
    limit = marks((9, "stopped", LIMIT), message=2, running=True)
    assert idle_outcome(limit, limits_as_recorded=True) == "stopped"
    assert idle_outcome(limit, limits_as_recorded=False) is None


def test_a_stop_of_a_paused_session_is_answered_without_running_the_agent() -> None:
    stop = marks((7, "paused", PAUSED_BY_USER), (8, "stopped"), 2, running=True)
    assert idle_answer(stop) == ("stopped", STOPPED_BY_USER)
    # mid-run, the controller answers; nothing asked, nothing to answer
    assert idle_answer(marks((5, "running"), (6, "stopped"), 2, running=True)) is None
    assert idle_answer(marks((7, "paused", PAUSED_BY_USER), (6, "paused"), 2)) is None
