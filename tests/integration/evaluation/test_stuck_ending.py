"""A trial stuck detection ended is reported as ``stuck`` because its last state says so
(``agent.state``'s ``stuck``, migration 0021), whatever its reason's words; a state recorded
before the field (words only) is read by its words as it always was, and another error is an
error. Before 0021 the view matched the words alone: the first case was reported ``error``."""

from __future__ import annotations

import uuid

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import AgentState, Message, SessionCreated
from app.projections import SessionState, bring_up_to_date
from app.store import EventStore


async def ended(store: EventStore, task: str, state: AgentState) -> uuid.UUID:
    session = uuid.uuid4()
    config = evaluation_config("nightly", Task(id=task, prompt="p"), 1)
    await store.append(
        session, [SessionCreated(config=config), Message(content="p"), state], expected_seq=0
    )
    return session


async def test_a_stuck_end_is_read_from_its_state_and_an_old_one_from_its_words(
    store: EventStore,
) -> None:
    said = await ended(
        store, "said", AgentState(state="error", reason="repeated itself", stuck=True)
    )
    worded = await ended(
        store, "worded", AgentState(state="error", reason="the agent looks stuck: same command")
    )
    other = await ended(store, "other", AgentState(state="error", reason="the model call failed"))
    await bring_up_to_date(store, SessionState())
    rows = await store.pool.fetch("SELECT session_id, ending FROM evaluation_sessions")
    endings = {row["session_id"]: row["ending"] for row in rows}
    assert endings == {said: "stuck", worded: "stuck", other: "error"}
    stored = await store.pool.fetchval(
        "SELECT payload FROM events WHERE session_id = $1 AND kind = 'agent.state'", other
    )
    assert "stuck" not in stored  # left out of the payload when not said
