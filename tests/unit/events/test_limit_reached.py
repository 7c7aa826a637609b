"""Which limit an ``agent.state`` says stopped its run: the ``limit`` it names, else (an
event recorded before it named one) its reason's words, as the views and session_state
read it."""

from __future__ import annotations

from app.events import AgentState
from app.events.conversation import limit_reached
from app.projections.session_state import status_of


def test_the_named_limit_wins_over_the_words() -> None:
    assert limit_reached("cost", "out of budget") == "cost"
    assert limit_reached("iterations", "reached the cost limit ($1)") == "iterations"
    assert status_of("stopped", "out of budget", "cost") == "limit"


def test_an_event_without_one_is_read_by_its_words() -> None:
    assert limit_reached(None, "reached the iteration limit (3); raise ...") == "iterations"
    assert limit_reached(None, "reached the cost limit ($1.00, spent $1.2)") == "cost"
    assert limit_reached(None, "the user stopped it") is None
    assert limit_reached("something else", "reached the cost limit") is None


def test_the_field_is_left_out_when_no_limit_stopped_the_run() -> None:
    assert "limit" not in AgentState(state="stopped", reason="interrupted").payload()
    named = AgentState(state="stopped", reason="reached the cost limit", limit="cost")
    assert named.payload()["limit"] == "cost"
