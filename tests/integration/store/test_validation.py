"""Validation at the log's door: the append function refuses what no valid session contains.

Before migration 0003 the function checked only that a cause was an earlier seq, so an
observation could "answer" a message or a seq taken from another session, and a session could
be created twice (`chronicle append --cause 0`, which silently dropped the cause:
tests/system/cli/test_cli.py).
"""

from __future__ import annotations

import re
import uuid

import asyncpg
import pytest

from app.events import (
    EVENT_TYPES,
    OBSERVATION_KINDS,
    Action,
    ErrorObservation,
    LlmCall,
    Message,
    Run,
    RunOutput,
    SessionCreated,
)
from app.store import EventStore, InvalidEventError

ACTION_KINDS = frozenset(kind for kind, cls in EVENT_TYPES.items() if issubclass(cls, Action))


async def test_the_databases_kind_sets_are_the_protocols(database_url: str) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        actions = await connection.fetchval("SELECT chronicle_action_kinds()")
        observations = await connection.fetchval("SELECT chronicle_observation_kinds()")
        # each month's own one-observation-per-action index (migration 0026)
        indexes = await connection.fetch(
            "SELECT pg_get_expr(x.indpred, x.indrelid) AS predicate FROM pg_inherits i "
            "JOIN pg_index x ON x.indrelid = i.inhrelid "
            "WHERE i.inhparent = 'events'::regclass "
            "AND x.indexrelid::regclass::text LIKE '%one_observation_per_action'"
        )
    finally:
        await connection.close()
    assert set(actions) == ACTION_KINDS
    assert set(observations) == OBSERVATION_KINDS
    # The one-observation-per-action index covers exactly the observation kinds too.
    assert len(indexes) == 3  # this month and the next two
    for row in indexes:
        listed = set(re.findall(r"[{,]([a-z.]+)(?=[,}])", row["predicate"]))
        assert listed == OBSERVATION_KINDS, row["predicate"]


async def test_an_observation_must_answer_an_action(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content="hi"), Run(command="true")])
    with pytest.raises(InvalidEventError, match="cause \\(seq 1\\) is a message event") as raised:
        await store.append(session, [RunOutput(exit_code=0, cause=1)])
    assert raised.value.field == "cause"
    await store.append(session, [RunOutput(exit_code=0, cause=2)])
    assert await store.last_seq(session) == 3


async def test_an_observation_cannot_answer_another_sessions_action(store: EventStore) -> None:
    theirs, mine = uuid.uuid4(), uuid.uuid4()
    await store.append(theirs, [Run(command="a"), Run(command="b"), Run(command="c")])
    await store.append(mine, [Message(content="only a message")])
    # seq 1 of this session is a message; seq 3 is an action only in the other session.
    with pytest.raises(InvalidEventError, match="is a message event"):
        await store.append(mine, [RunOutput(exit_code=0, cause=1)])
    with pytest.raises(InvalidEventError, match="cause"):
        await store.append(mine, [Message(content="x"), RunOutput(exit_code=0, cause=3)])
    assert await store.last_seq(mine) == 1


async def test_within_a_batch_the_answered_event_must_be_an_action(store: EventStore) -> None:
    session = uuid.uuid4()
    with pytest.raises(InvalidEventError, match="is a message event"):
        await store.append(session, [Message(content="m"), RunOutput(exit_code=0, cause=1)])
    assert await store.last_seq(session) == 0
    recorded = await store.append(session, [Run(command="x"), RunOutput(exit_code=0, cause=1)])
    assert [e.seq for e in recorded] == [1, 2]


async def test_an_error_may_answer_a_model_call(store: EventStore) -> None:
    """Tool calls the agent could not turn into actions are answered by one error."""
    session = uuid.uuid4()
    await store.append(session, [LlmCall(model="m", fingerprint="f")])
    await store.append(session, [ErrorObservation(message="bad tool call", cause=1)])
    with pytest.raises(InvalidEventError, match=r"is a llm\.call event"):
        await store.append(session, [RunOutput(exit_code=0, cause=1)])


async def test_a_session_is_created_once(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="first")], expected_seq=0)
    with pytest.raises(InvalidEventError, match=r"already has its session\.created"):
        await store.append(session, [SessionCreated(title="again")])
    other = uuid.uuid4()
    with pytest.raises(InvalidEventError, match=r"already has its session\.created"):
        await store.append(other, [SessionCreated(title="a"), SessionCreated(title="b")])
    assert await store.last_seq(session) == 1 and await store.last_seq(other) == 0
