"""The controller's decisions on plain values: each branch of ``decide``, condensing, and
actions given up (app/agent/decisions.py), without a database or a model."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from app.agent.decisions import (
    AskModel,
    AwaitActions,
    Continue,
    End,
    Limits,
    Pause,
    Situation,
    Wait,
    after_model_error,
    condensation,
    decide,
    overdue,
    without_refused,
)
from app.agent.steering import PAUSED_BY_USER, STOPPED_BY_USER
from app.agent.stuck import StuckConfig
from app.events import Condensation, ErrorObservation, InvalidEventError, LlmCall, LlmResponse
from app.store import RecordedEvent

LIMITS = Limits(max_iterations=10, max_cost_usd=1.0)
STUCK = StuckConfig()


def event(
    seq: int,
    kind: str,
    source: str,
    payload: dict[str, Any] | None = None,
    cause: int | None = None,
) -> RecordedEvent:
    return RecordedEvent(
        seq,
        uuid.uuid4(),
        seq,
        uuid.uuid4(),
        1,
        kind,
        source,
        cause,
        payload or {},
        1,
        datetime.now(UTC),
        b"",
    )


USER = event(1, "message", "user", {"content": "do it"})
#: A user asked, and nothing stands in the way of the next model call.
READY = Situation(asked=True, recent=[], iterations=3, cost=0.1)


def test_a_ready_session_asks_the_model() -> None:
    assert decide(READY, LIMITS, STUCK) == AskModel()


def test_nothing_asked_yet_waits() -> None:
    assert decide(Situation(), LIMITS, STUCK) == Wait()


def test_a_stop_ends_the_run_before_anything_else() -> None:
    call = event(2, "llm.call", "agent")
    situation = Situation(
        request="stopped", unprocessed_call=call, pending=True, asked=True, iterations=99
    )
    assert decide(situation, LIMITS, STUCK) == End("stopped", STOPPED_BY_USER, "stopped")


def test_a_pause_waits_for_the_user_or_ends_a_run_told_to_stop_when_paused() -> None:
    paused = Situation(request="paused", asked=True)
    assert decide(paused, LIMITS, STUCK) == Pause(PAUSED_BY_USER)
    assert decide(paused, LIMITS, STUCK, stop_when_paused=True) == End(
        "paused", PAUSED_BY_USER, "paused"
    )


def test_a_resume_request_goes_on() -> None:
    assert decide(Situation(request="running", asked=True), LIMITS, STUCK) == AskModel()


def test_a_recorded_call_that_led_nowhere_is_continued_before_waiting_or_limits() -> None:
    call = event(2, "llm.call", "agent")
    situation = Situation(unprocessed_call=call, pending=True, asked=True, iterations=99)
    assert decide(situation, LIMITS, STUCK) == Continue(call)


def test_pending_actions_are_awaited_before_the_next_step() -> None:
    situation = Situation(pending=True, asked=True, iterations=99)
    assert decide(situation, LIMITS, STUCK) == AwaitActions()


def test_finish_ends_the_run_whatever_the_limits() -> None:
    situation = Situation(asked=True, finished_since_user=True, iterations=99, cost=5.0)
    assert decide(situation, LIMITS, STUCK) == End(
        "finished", "the agent called finish", "finished"
    )


def test_an_agent_message_last_awaits_the_user() -> None:
    recent = [USER, event(2, "message", "agent", {"content": "which file?"})]
    assert decide(Situation(asked=True, recent=recent), LIMITS, STUCK) == End(
        "awaiting_user_input", "the agent asked for your input", "awaiting_user_input"
    )


def test_the_iteration_limit_stops_with_what_to_do() -> None:
    decision = decide(Situation(asked=True, iterations=10), LIMITS, STUCK)
    assert isinstance(decision, End)
    assert (decision.state, decision.outcome, decision.limit) == (
        "stopped",
        "stopped",
        "iterations",
    )
    assert decision.reason == (
        "reached the iteration limit (10); raise --max-iterations and resume to continue"
    )
    assert decide(Situation(asked=True, iterations=9), LIMITS, STUCK) == AskModel()


def test_the_cost_limit_stops_with_what_was_spent() -> None:
    decision = decide(Situation(asked=True, cost=1.25), LIMITS, STUCK)
    assert decision == End(
        "stopped",
        "reached the cost limit ($1.00, spent $1.2500); raise --max-cost and resume to continue",
        "stopped",
        limit="cost",
    )
    assert decide(Situation(asked=True, cost=5.0), Limits(), STUCK) == AskModel()  # no limit


def test_the_iteration_limit_is_checked_before_the_cost_limit() -> None:
    decision = decide(Situation(asked=True, iterations=10, cost=5.0), LIMITS, STUCK)
    assert isinstance(decision, End) and "iteration limit" in decision.reason


def _same_error_three_times() -> list[RecordedEvent]:
    recent = [USER]
    for i in range(3):
        run = event(2 + 2 * i, "run", "agent", {"command": f"make {i}"})
        error = event(3 + 2 * i, "error", "environment", {"message": "disk full"}, cause=run.seq)
        recent += [run, error]
    return recent


def test_a_stuck_agent_ends_in_error_saying_why() -> None:
    situation = Situation(asked=True, recent=_same_error_three_times())
    decision = decide(situation, LIMITS, STUCK)
    assert decision == End(
        "error",
        "the agent looks stuck: the same error came back 3 times: disk full",
        "error",
        stuck=True,  # recorded on the agent.state: reports read it, not the words
    )
    assert decide(situation, LIMITS, StuckConfig(enabled=False)) == AskModel()


def test_condensation_drops_the_older_half_of_the_answered_calls() -> None:
    made = condensation([2, 5, 9, 14], None)
    assert made is not None
    assert (made.forget_before, made.forgotten_calls) == (9, 2)
    assert made.reason == "the conversation exceeded the model's context window"


def test_condensation_counts_from_the_last_one() -> None:
    last = event(10, "agent.condensation", "agent", {"forget_before": 9, "forgotten_calls": 2})
    made = condensation([2, 5, 9, 14, 20, 25], last)
    assert made is not None
    assert (made.forget_before, made.forgotten_calls) == (20, 4)
    assert condensation([2, 5, 9], last) is None  # only 9 is left since the last one


def test_condensation_needs_two_calls() -> None:
    assert condensation([], None) is None
    assert condensation([4], None) is None


def test_a_context_window_error_condenses_when_it_can() -> None:
    made = Condensation(forget_before=9, forgotten_calls=2, reason="r")
    assert after_model_error("context_window", "too long", made) is made


@pytest.mark.parametrize(("kind", "made"), [("context_window", None), ("auth", "some")])
def test_other_model_errors_end_the_run_in_error(kind: str, made: str | None) -> None:
    condensed = Condensation(forget_before=9, forgotten_calls=2, reason="r") if made else None
    assert after_model_error(kind, "no key", condensed) == End(
        "error", "the model call failed: no key", "error"
    )


def test_actions_past_their_timeout_and_the_grace_are_overdue() -> None:
    limits = Limits(pending_grace=30, default_action_timeout=150)
    timed = event(2, "run", "agent", {"command": "sleep 100", "timeout": 10})
    default = event(3, "run", "agent", {"command": "make"})
    unseen = event(4, "run", "agent", {"command": "ls"})
    seen_at = {2: 1000.0, 3: 1000.0}
    assert overdue([timed, default, unseen], seen_at, 1040.0, limits) == []
    assert overdue([timed, default, unseen], seen_at, 1041.0, limits) == [(timed, 41.0)]
    late = overdue([timed, default, unseen], seen_at, 1181.0, limits)
    assert late == [(timed, 181.0), (default, 181.0)]


def _call() -> LlmCall:
    response = LlmResponse(content="x", finish_reason="tool_calls")
    return LlmCall(model="m", fingerprint="f", response=response)


def test_a_refused_action_is_recorded_as_an_error_beside_the_paid_call() -> None:
    call = _call()
    refused = InvalidEventError("too large", kind="run")
    recorded_call, error = without_refused(call, 7, refused)
    assert recorded_call is call
    assert isinstance(error, ErrorObservation)
    assert (error.cause, error.error_type) == (7, "unrecordable")
    assert error.message == "what the model asked for could not be recorded (too large)"


def test_a_refused_call_is_recorded_without_its_response() -> None:
    refused = InvalidEventError("bad text", kind="llm.call")
    recorded_call, error = without_refused(_call(), 7, refused)
    assert isinstance(recorded_call, LlmCall)
    assert recorded_call.response == LlmResponse(finish_reason="tool_calls")
    assert recorded_call.error_kind == "bad_response"
    assert recorded_call.error == "the model's reply could not be recorded (bad text)"
    assert isinstance(error, ErrorObservation) and error.message == recorded_call.error
