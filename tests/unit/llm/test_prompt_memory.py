"""The gateway keeps what it knows of a conversation's messages (masked form, hashes, wire
form) in its last request only: nothing per message outlives the prompt it belongs to, and a
prompt that starts over (a condensed conversation) is prepared exactly as a new gateway would
prepare it."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from app.llm import LlmConfig, LlmGateway


class _NoStore:
    """Stores prompt messages nowhere (the gateway drops a message's text once stored)."""

    masker = None

    async def put_messages(self, hashes: list[str], texts: list[str]) -> int:
        return len(hashes)


class _Message(dict[str, Any]):
    """A message that can be watched with a weak reference (a plain dict cannot)."""


def _gateway() -> LlmGateway:
    return LlmGateway(_NoStore(), LlmConfig(model="m", native_tool_calling=True))  # type: ignore[arg-type]


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {}}}]


async def test_messages_of_an_old_prompt_are_not_held() -> None:
    # Before, the gateway cached each message's masked form and hashes by message object
    # (``_masks``, ``_hashes``) for as long as it lived: every message of a session stayed
    # in memory twice over, whatever the prompt held. Now the last request holds them.
    gateway = _gateway()
    system = _Message(role="system", content="s")
    conversation: list[dict[str, Any]] = [system]
    for n in range(20):
        conversation = [*conversation, _Message(role="user", content=f"u{n}")]
        await gateway.store_prompt(gateway.prepare(conversation, TOOLS))
    watched = [weakref.ref(message) for message in conversation[1:]]
    condensed: list[dict[str, Any]] = [system, _Message(role="user", content="condensed")]
    await gateway.store_prompt(gateway.prepare(condensed, TOOLS))
    del conversation
    gc.collect()
    assert [ref() for ref in watched] == [None] * 20


def test_a_prompt_that_starts_over_is_prepared_as_a_new_gateway_prepares_it() -> None:
    gateway = _gateway()
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    for n in range(6):
        conversation = [
            *conversation,
            {"role": "assistant", "content": f"a{n}"},
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"t{n}"},
        ]
        gateway.prepare(conversation, TOOLS)
    # condensed: the system prompt, a note, then the later half (the same message objects)
    condensed = [conversation[0], {"role": "user", "content": "[note]"}, *conversation[7:]]
    again = gateway.prepare(condensed, TOOLS)
    fresh = _gateway().prepare(condensed, TOOLS)
    assert again.fingerprint == fresh.fingerprint
    assert again.prompt == fresh.prompt
    assert again.wire == fresh.wire and again.messages == fresh.messages
    assert again.wire[2] is gateway.prepare(conversation, TOOLS).wire[7]


def test_a_client_sending_every_message_anew_leaves_none_held() -> None:
    # The model gateway's clients (app/external) send the whole conversation as new objects
    # in each request, conversations of many sessions interleaved. Before, the text made to
    # hash each message (and the message with it) was kept for every message already stored,
    # and for every tool: the process grew by every prompt it relayed.
    gateway = _gateway()
    watched: list[weakref.ref[_Message]] = []
    for round_ in range(6):
        for name in ("a", "b"):
            turns = [("system", name), *(("user", f"{name}{n}") for n in range(round_ + 1))]
            messages: list[dict[str, Any]] = [_Message(role=r, content=c) for r, c in turns]
            tools: list[dict[str, Any]] = [_Message(tool) for tool in TOOLS]
            request = gateway.prepare(messages, tools)
            gateway.stored_now(gateway.unstored(request))  # as a recorded llm.call does
            if 0 < round_ < 5:  # the first tool list is kept by its hash's cache, the last
                watched += [weakref.ref(message) for message in [*messages, *tools]]  # type: ignore[misc]
    gc.collect()
    assert [ref() for ref in watched] == [None] * len(watched)
