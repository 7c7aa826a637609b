"""``agent_states.limit_reached`` reads the limit an ``agent.state`` names (migration 0020),
and an event recorded before there was one by its reason's words: every view answers the
same for old and new events as before the migration."""

from __future__ import annotations

import uuid

import asyncpg

from app.events import AgentState, Message, SessionCreated
from app.store import EventStore, migrate
from app.store.analytics import VIEWS, view_query

ITERATIONS = "reached the iteration limit (3); raise --max-iterations and resume to continue"
COST = "reached the cost limit ($1.00, spent $1.2000); raise --max-cost and resume to continue"


async def _session(store: EventStore, *states: AgentState) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="limits"), Message(content="go"), *states])
    return session


#: Views added after revision 0019: the older schema has none of them to compare.
LATER_VIEWS = {"annotations"}


async def _views(database_url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every analytics view the database has, answered."""
    connection = await asyncpg.connect(database_url)
    try:
        answers = {}
        for name in VIEWS:
            if await connection.fetchval("SELECT to_regclass($1) IS NULL", name):
                continue
            sql, args = view_query(name)
            answers[name] = [tuple(row) for row in await connection.fetch(sql, *args)]
        return answers
    finally:
        await connection.close()


async def _limits(database_url: str) -> dict[tuple[uuid.UUID, int], str | None]:
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT session_id, seq, limit_reached FROM agent_states")
        return {(row["session_id"], row["seq"]): row["limit_reached"] for row in rows}
    finally:
        await connection.close()


def _stop(reason: str, limit: str | None = None) -> AgentState:
    return AgentState(state="stopped", reason=reason, source="agent", limit=limit)  # type: ignore[arg-type]


async def test_every_view_answers_old_and_new_events_as_before(
    store: EventStore, database_url: str
) -> None:
    """Old events (the limit only in the reason) and new ones (the limit named, the reason
    worded as the controller words it): the views at head and at 0019 agree row for row."""
    old = await _session(store, AgentState(state="running", source="agent"), _stop(ITERATIONS))
    new = await _session(store, _stop(COST, "cost"))
    await _session(store, _stop(ITERATIONS, "iterations"), _stop("the user stopped it"))
    at_head = await _views(database_url)
    limits = await _limits(database_url)
    assert limits[(old, 4)] == "iterations" and limits[(old, 3)] is None
    assert limits[(new, 3)] == "cost"
    migrate.downgrade(database_url, "0019")
    try:
        older = await _views(database_url)
        assert set(at_head) - set(older) == LATER_VIEWS
        assert older == {name: rows for name, rows in at_head.items() if name in older}
    finally:
        migrate.upgrade(database_url)


async def test_the_named_limit_is_read_not_the_words(store: EventStore, database_url: str) -> None:
    """A stop that names its limit is classified by it, whatever its reason says; one that
    names none keeps the reading of its words (an event recorded before 0020)."""
    session = await _session(
        store, _stop("out of budget", "cost"), _stop("reached the cost limit once")
    )
    limits = await _limits(database_url)
    assert limits[(session, 3)] == "cost"
    assert limits[(session, 4)] == "cost"
