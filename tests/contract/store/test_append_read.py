"""Appending and reading one session: seqs, atomic batches, idempotency, refusals (the
event store contract: tests/contract/store/conftest.py)."""

from __future__ import annotations

import uuid

import pytest

from app.events import McpCall, Message, Run
from app.store import (
    DuplicateEventError,
    EventStore,
    EventTooLargeError,
)
from tests.support.stores import StoreOpener


async def test_append_assigns_gapless_seqs_and_reads_back(store: EventStore) -> None:
    session = uuid.uuid4()
    first = await store.append(session, [Message(content="hi", source="user")], expected_seq=0)
    rest = await store.append(
        session,
        [Run(command="ls", cause=None), Message(content="done", source="agent")],
        expected_seq=1,
    )
    assert [e.seq for e in first + rest] == [1, 2, 3]
    events = await store.read(session)
    assert [(e.seq, e.kind, e.source) for e in events] == [
        (1, "message", "user"),
        (2, "run", "agent"),
        (3, "message", "agent"),
    ]
    assert events[0].payload == {"content": "hi"}
    assert events[0].event() == Message(content="hi", source="user", event_id=events[0].event_id)
    assert [e.hash for e in events] == [e.hash for e in first + rest]
    assert await store.read(session, after_seq=1, limit=1) == [events[1]]
    assert await store.last_seq(session) == 3


async def test_a_read_can_leave_top_level_fields_out(store: EventStore) -> None:
    """``leave_out``: the fields are not read (a reader of spans skips the prompt hashes);
    the rest of each payload, escapes and long strings included, is read whole."""
    session = uuid.uuid4()
    long = "x" * 300_000
    await store.append(
        session,
        [
            Run(command=long, cause=None, thought="nul\x00 kept"),
            Message(content="hi", source="user"),
        ],
        expected_seq=0,
    )
    whole = await store.read(session)
    without = await store.read(session, leave_out=("command", "absent"))
    assert "command" in whole[0].payload and "command" not in without[0].payload
    assert without[0].payload == {k: v for k, v in whole[0].payload.items() if k != "command"}
    assert without[0].payload["thought"] == "nul\x00 kept"
    assert without[1] == whole[1]
    assert await store.read(session, after_seq=1, leave_out=("content",)) == [
        whole[1]._replace(payload={})
    ]


async def test_resending_a_batch_returns_recorded_events(store: EventStore) -> None:
    session = uuid.uuid4()
    batch = [Message(content="one"), Message(content="two")]
    recorded = await store.append(session, batch, expected_seq=0)
    again = await store.append(session, batch, expected_seq=0)  # the stale expected_seq too
    assert again == recorded
    unchecked = await store.append(session, batch)
    assert unchecked == recorded
    assert await store.last_seq(session) == 2
    assert len(await store.read_all()) == 2  # nothing written twice, anywhere


async def test_partial_resend_is_refused_and_writes_nothing(store: EventStore) -> None:
    session = uuid.uuid4()
    old = Message(content="old")
    await store.append(session, [old])
    with pytest.raises(DuplicateEventError, match="re-sent whole"):
        await store.append(session, [Message(content="new"), old])
    with pytest.raises(DuplicateEventError, match="re-sent whole"):
        await store.append(session, [old, Message(content="new")], expected_seq=0)
    assert await store.last_seq(session) == 1


def _many_small_strings(n: int) -> McpCall:
    """A payload too large by its structure: no string long enough for a blob."""
    return McpCall(server="s", tool="t", arguments={f"k{i}": "v" * 40 for i in range(n)})


async def test_oversized_event_refuses_whole_batch(open_store: StoreOpener) -> None:
    async with open_store(max_event_bytes=10_000) as store:
        session = uuid.uuid4()
        with pytest.raises(EventTooLargeError, match="over the limit of 10,000"):
            await store.append(session, [Message(content="fits"), _many_small_strings(300)])
        assert await store.read(session) == []
        await store.append(session, [_many_small_strings(150)])
        # A long string is no reason to refuse: it goes to a blob.
        await store.append(session, [Message(content="x" * 20_000)])


async def test_default_size_limit_is_one_mebibyte_of_payload_structure(store: EventStore) -> None:
    session = uuid.uuid4()
    with pytest.raises(EventTooLargeError):
        await store.append(session, [_many_small_strings(30_000)])  # 1.4 MB of small strings
    await store.append(session, [Message(content="é" * 600_000)])  # 1.2 MB: a blob
    assert (await store.read(session))[0].payload["content"] == "é" * 600_000


async def test_tricky_payload_values_round_trip(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(
        session,
        [
            {
                "kind": "mcp.call",
                "server": "s",
                "tool": "t",
                "arguments": {
                    "float": 1.5e-7,
                    "integral": 3.0,
                    "big": 1e20,
                    "text": 'quote " backslash \\ newline \n tab \t emoji 🎉 ctrl \x01',
                    "nested": [{"z": 1, "a": [None, True, False]}],
                },
            }
        ],
    )
    [event] = await store.read(session)
    args = event.payload["arguments"]
    assert args["integral"] == 3 and args["big"] == 10**20 and args["float"] == 1.5e-7
    assert (await store.verify(session)).ok
