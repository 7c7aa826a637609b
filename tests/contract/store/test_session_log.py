"""One session's log: appends, reads, refusals and live delivery, the part of the event store
contract every ``SessionLog`` keeps (the controller's, the workers' and replay's needs), run
against PostgreSQL and ``MemoryLog`` alike (tests/contract/store/conftest.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.events import FileEdit, Message, Run, RunOutput, SessionCreated
from app.store import (
    ConcurrencyError,
    DuplicateEventError,
    InvalidEventError,
    SessionLog,
)
from tests.support.subscriptions import nothing_more, take


async def test_expected_seq_mismatch_raises_with_actual(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    await session_log.append(session, [Message(content="a"), Message(content="b")], expected_seq=0)
    with pytest.raises(ConcurrencyError) as raised:
        await session_log.append(session, [Message(content="c")], expected_seq=1)
    assert raised.value.actual_seq == 2
    assert "expected 1" in str(raised.value)
    assert len(await session_log.read(session)) == 2


async def test_event_id_of_another_session_is_refused(session_log: SessionLog) -> None:
    event = Message(content="mine")
    await session_log.append(uuid.uuid4(), [event])
    with pytest.raises(DuplicateEventError, match="already recorded in session"):
        await session_log.append(uuid.uuid4(), [event])


async def test_dict_events_are_validated(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    recorded = await session_log.append(session, [{"kind": "run", "command": "pwd", "timeout": 5}])
    assert recorded[0].payload["command"] == "pwd"
    assert recorded[0].source == "agent"


async def test_unknown_kind_is_refused_naming_it(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    with pytest.raises(InvalidEventError, match="unknown event kind 'telepathy'"):
        await session_log.append(session, [Message(content="ok"), {"kind": "telepathy"}])
    assert await session_log.read(session) == []


async def test_invalid_payload_is_refused_naming_the_field(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    with pytest.raises(InvalidEventError) as raised:
        await session_log.append(
            session,
            [Message(content="ok"), {"kind": "file.edit", "command": "explode", "path": "a"}],
        )
    assert raised.value.kind == "file.edit"
    assert raised.value.field == "command"
    with pytest.raises(InvalidEventError, match="'run' event: field 'command'"):
        await session_log.append(session, [{"kind": "run"}])
    assert await session_log.read(session) == []
    FileEdit(command="view", path="x")  # the valid form still works


async def test_cause_must_name_an_earlier_event(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    await session_log.append(session, [Run(command="true")])
    with pytest.raises(InvalidEventError, match="cause"):
        await session_log.append(session, [RunOutput(output="", cause=7)])
    await session_log.append(session, [RunOutput(output="", exit_code=0, cause=1)])


async def test_one_observation_per_action(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    await session_log.append(session, [Run(command="true"), RunOutput(exit_code=0, cause=1)])
    with pytest.raises(DuplicateEventError, match="already has its observation"):
        await session_log.append(session, [RunOutput(exit_code=1, cause=1)])


async def test_batch_of_action_and_its_observation(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    recorded = await session_log.append(session, [Run(command="x"), RunOutput(output="y", cause=1)])
    assert recorded[1].cause == 1


async def test_empty_append_is_a_no_op(session_log: SessionLog) -> None:
    assert await session_log.append(uuid.uuid4(), []) == []


async def test_subscribe_delivers_backlog_then_live_events(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    await session_log.append(session, [Message(content="before")])
    stream = session_log.subscribe(session)
    assert [e.payload["content"] for e in await take(stream, 1)] == ["before"]
    # The subscription has read its backlog (only "before"): what follows is new to it.
    waiter = asyncio.create_task(take(stream, 2))
    await session_log.append(session, [Message(content="live 1")])
    await session_log.append(session, [Message(content="live 2")])
    assert [e.seq for e in await waiter] == [2, 3]
    assert await nothing_more(stream)
    await stream.aclose()


async def test_subscribe_after_seq_skips_earlier_events(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    await session_log.append(session, [Message(content=str(i)) for i in range(5)])
    stream = session_log.subscribe(session, after_seq=3)
    assert [e.seq for e in await take(stream, 2)] == [4, 5]
    await stream.aclose()


async def test_a_resent_batch_is_recorded_once(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    batch = [Message(content="one"), Message(content="two")]
    recorded = await session_log.append(session, batch, expected_seq=0)
    assert await session_log.append(session, batch, expected_seq=0) == recorded
    assert await session_log.append(session, batch) == recorded
    assert await session_log.read(session) == recorded


async def test_reads_give_what_appends_recorded(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    first = await session_log.append(session, [Message(content="hi", source="user")])
    rest = await session_log.append(session, [Run(command="ls"), RunOutput(output="a", cause=2)])
    events = await session_log.read(session)
    assert events == first + rest
    assert [e.seq for e in events] == [1, 2, 3]
    assert len({e.hash for e in events}) == 3  # each chained to the one before
    assert await session_log.read(session, after_seq=1, limit=1) == [events[1]]
    assert await session_log.read(session, after_seq=3) == []
    assert await session_log.read(uuid.uuid4()) == []


async def test_an_observation_must_answer_an_action(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    await session_log.append(session, [Message(content="not an action")])
    with pytest.raises(InvalidEventError, match="must answer an action") as raised:
        await session_log.append(session, [RunOutput(output="", cause=1)])
    assert raised.value.field == "cause"
    assert len(await session_log.read(session)) == 1


async def test_checkpoints_are_saved_and_loaded_by_name(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    [event] = await session_log.append(session, [Run(command="true")])
    name = f"executor:{session}"
    assert await session_log.load_checkpoint(name) is None
    await session_log.save_checkpoint(name, event.position)
    assert await session_log.load_checkpoint(name) == event.position
    [later] = await session_log.append(session, [RunOutput(exit_code=0, cause=1)])
    await session_log.save_checkpoint(name, later.position)
    assert await session_log.load_checkpoint(name) == later.position
    assert later.position > event.position


async def test_a_cancelled_wait_loses_nothing(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    async with session_log.subscribe(session) as stream:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(stream), 0.2)
        await session_log.append(session, [Message(content="after the wait")])
        assert [e.payload["content"] for e in await take(stream, 1)] == ["after the wait"]


async def test_a_subscription_follows_its_session_only(session_log: SessionLog) -> None:
    session, elsewhere = uuid.uuid4(), uuid.uuid4()
    stream = session_log.subscribe(session)
    await session_log.append(elsewhere, [Message(content="not mine")])
    await session_log.append(session, [Message(content="mine")])
    [event] = await take(stream, 1)
    assert (event.session_id, event.payload["content"]) == (session, "mine")
    assert await nothing_more(stream)
    await stream.aclose()


async def test_a_session_is_created_once(session_log: SessionLog) -> None:
    session = uuid.uuid4()
    await session_log.append(session, [SessionCreated(title="first")])
    with pytest.raises(InvalidEventError, match="a session is created once"):
        await session_log.append(session, [SessionCreated(title="again")])
    assert [e.payload["title"] for e in await session_log.read(session)] == ["first"]
