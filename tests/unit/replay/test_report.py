"""A replay's result in words: each kind of divergence says what differed."""

from __future__ import annotations

import uuid

from app.replay import ReplayResult
from app.replay.divergence import (
    ActionDivergence,
    FieldChange,
    MessageChange,
    MissingCall,
    OutcomeDivergence,
    RequestDivergence,
)
from app.replay.report import describe


def result(**fields: object) -> ReplayResult:
    values: dict[str, object] = {
        "session_id": uuid.uuid4(),
        "replay_of": uuid.uuid4(),
        "mode": "strict",
        "matched": False,
        "outcome": None,
        "recorded_outcome": "finished",
        "steps_recorded": 3,
        "steps_served": 2,
        "steps_matched": 1,
        "divergence": None,
        "differences": [],
        "model_calls": 0,
        "seconds": 0.25,
    }
    return ReplayResult.model_validate(values | fields)


def test_an_action_divergence_shows_each_field() -> None:
    action = ActionDivergence(
        step=2,
        recorded_seq=9,
        index=0,
        recorded={"kind": "run", "command": "ls"},
        new={"kind": "run", "command": "ls -a"},
        fields=[FieldChange(field="command", recorded="ls", new="ls -a")],
        summary="model call 2: the agent's run differs from the recorded one (command)",
    )
    text = describe(result(divergence=action))
    assert "1 of 3 model calls matched, 2 served, 0 made, 0.25 s" in text
    assert "diverged (action): model call 2: the agent's run differs" in text
    assert '  command: recorded "ls", replay "ls -a"' in text


def test_missing_calls_and_outcomes_say_where_and_how() -> None:
    missing = MissingCall(
        step=3,
        recorded_seq=20,
        remaining=1,
        outcome="stopped",
        summary="model call 3: the agent stopped",
    )
    assert "next recorded call at seq 20" in describe(result(divergence=missing))
    outcome = OutcomeDivergence(
        step=3,
        recorded_state="error",
        recorded_reason="stuck",
        new_state="stopped",
        new_reason="limit",
        summary="after model call 3: the run ended stopped",
    )
    text = describe(result(divergence=outcome))
    assert "  recorded: error (stuck)" in text and "  replay:   stopped (limit)" in text


def test_a_match() -> None:
    text = describe(result(matched=True, outcome="finished", steps_served=3, steps_matched=3))
    assert text.endswith("matched: ended finished as recorded")


def test_the_same_request_difference_at_every_call_is_shown_once() -> None:
    change = MessageChange(
        index=0,
        recorded_role="system",
        new_role="system",
        diff="--- recorded\n+++ replay\n-old\n+new\n",
    )
    differences = [
        RequestDivergence(
            step=step,
            recorded_seq=step * 3,
            recorded_fingerprint="a",
            new_fingerprint="b",
            message=change,
            summary=f"model call {step}: prompt message 0 (system) differs",
        )
        for step in (1, 2, 3)
    ]
    text = describe(result(outcome="finished", differences=differences))
    assert text.count("request differs") == 1 and text.count("+new") == 1
    assert "at model calls 1, 2, 3: prompt message 0 (system) differs" in text
    assert text.endswith("not stopped: ended finished (finished recorded)")
