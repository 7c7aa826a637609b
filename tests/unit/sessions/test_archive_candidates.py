"""What "ended" means for `chronicle archive`: the phases the API steers by, read from the
marks one query gives per session (app/sessions/sql/archive_candidates.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import get_args

import pytest

from app.agent.steering import Phase, StateMark, SteeringMarks, phase_of
from app.sessions.sql.archive_candidates import ENDED_PHASES, Candidate

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _candidate(phase: Phase, closed: bool = False) -> Candidate:
    return Candidate(
        session_id=uuid.uuid4(), last_seq=5, last_event_at=NOW, phase=phase, closed=closed
    )


@pytest.mark.parametrize("phase", get_args(Phase))
def test_only_an_ending_phase_is_ended(phase: Phase) -> None:
    ended = phase in {"finished", "awaiting_user_input", "stopped", "error", "limit"}
    assert _candidate(phase).ended is ended
    assert (phase in ENDED_PHASES) is ended


def test_a_closed_session_is_ended_unless_something_runs_it() -> None:
    assert _candidate("interrupted", closed=True).ended
    assert not _candidate("running", closed=True).ended


def test_nothing_that_runs_is_ended() -> None:
    running = _candidate("finished").model_copy(update={"running": True})
    assert not running.ended


@pytest.mark.parametrize(
    ("marks", "ended"),
    [
        (SteeringMarks(last_seq=3, state=StateMark(seq=3, state="finished")), True),
        # finished, but a message came after: the agent has something to answer
        (SteeringMarks(last_seq=4, state=StateMark(seq=3, state="finished"), message_seq=4), False),
        # finished, and a worker was asked to run it again
        (SteeringMarks(last_seq=3, state=StateMark(seq=3, state="finished"), running=True), False),
        # paused by the user, answered by the agent
        (
            SteeringMarks(
                last_seq=4,
                state=StateMark(seq=4, state="paused", reason="paused by the user"),
                request=StateMark(seq=3, state="paused"),
            ),
            False,
        ),
        # stopped by the user, answered
        (
            SteeringMarks(
                last_seq=4,
                state=StateMark(seq=4, state="stopped", reason="stopped by the user"),
                request=StateMark(seq=3, state="stopped"),
            ),
            True,
        ),
        # the agent was working and nothing runs it: interrupted, may be resumed
        (SteeringMarks(last_seq=3, state=StateMark(seq=3, state="running")), False),
        (SteeringMarks(last_seq=2), False),  # the agent never started
        (SteeringMarks(last_seq=3, state=StateMark(seq=3, state="error")), True),
    ],
)
def test_ended_as_the_log_and_the_leases_say(marks: SteeringMarks, ended: bool) -> None:
    candidate = _candidate(phase_of(marks)).model_copy(update={"running": marks.running})
    assert candidate.ended is ended
