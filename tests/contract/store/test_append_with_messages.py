"""Prompt messages appended with the llm.call that names them: stored together or not at all
(the event store contract: tests/contract/store/conftest.py).

Before, the gateway stored a step's messages with ``put_messages`` and then appended the call
(two round trips); ``append(..., messages=...)`` does both in one transaction.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest

from app.events import LlmCall, LlmResponse, Message, Run
from app.events.canonical import canonical_json
from app.store import ConcurrencyError, ContentMismatchError, EventStore


def _keyed(*messages: dict[str, str]) -> dict[str, str]:
    texts = [canonical_json(message) for message in messages]
    return {hashlib.sha256(text.encode()).hexdigest(): text for text in texts}


TOOLS = _keyed({"tools": []})


def _call(prompt: list[str]) -> LlmCall:
    return LlmCall(
        model="m",
        fingerprint="f",
        prompt=prompt,
        tools=next(iter(TOOLS)),
        response=LlmResponse(content="ok", finish_reason="stop"),
    )


async def test_messages_are_stored_with_the_call_that_names_them(store: EventStore) -> None:
    session = uuid.uuid4()
    sent = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "café"},
        {"role": "user", "content": "next"},
    ]
    messages = _keyed(*sent[:2])
    first = [_call(list(messages))]
    one = await store.append(session, first, expected_seq=0, messages=messages | TOOLS)
    more = _keyed(sent[2])
    batch = [_call(list(more)), Run(command="ls", cause=2)]
    two = await store.append(session, batch, expected_seq=1, messages=more)  # a batch too
    assert [e.seq for e in one + two] == [1, 2, 3]
    keys = [*messages, *more]
    assert await store.read_messages(keys) == dict(zip(keys, sent, strict=True))
    # a message already stored may come again (ignored), with or without new ones
    await store.append(session, [Message(content="x")], expected_seq=3, messages=messages)
    assert (await store.verify(session)).ok


async def test_a_refused_append_stores_none_of_its_messages(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content="first")], expected_seq=0)
    messages = _keyed({"role": "user", "content": "never named"})
    with pytest.raises(ConcurrencyError):
        await store.append(session, [_call(list(messages))], expected_seq=0, messages=messages)
    assert await store.read_messages(list(messages)) == {}


async def test_a_message_not_matching_its_key_refuses_the_events_too(store: EventStore) -> None:
    session = uuid.uuid4()
    good = _keyed({"role": "user", "content": "good"})
    wrong = {next(iter(good)): canonical_json({"role": "user", "content": "forged"})}
    with pytest.raises(ContentMismatchError):
        await store.append(session, [_call(list(good))], expected_seq=0, messages=wrong)
    assert await store.read(session) == []
    assert await store.read_messages(list(good)) == {}
    with pytest.raises(ContentMismatchError, match="sha256 hex"):
        await store.append(session, [Message(content="x")], messages={"not hex": "{}"})
    assert await store.read(session) == []
