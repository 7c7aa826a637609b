"""Streamed chat-completion chunks relayed as Anthropic's server-sent events, read by the
anthropic SDK itself: its SSE decoder, its event models and its stream accumulator
(``client.messages.stream``) over an in-memory transport, so what it assembles is what an
agent on the SDK gets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message

from app.external.anthropic_reply import to_message
from app.external.anthropic_stream import AnthropicStream, StreamEvent, error_event, stream_frames
from app.external.calls import CallStream
from app.external.errors import GatewayError


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-9", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": choices, **extra}  # fmt: skip


def tool_delta(
    index: int, arguments: str, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    return {
        "index": index,
        "id": call_id,
        "type": "function" if call_id else None,
        "function": function,
    }


#: A reply that thinks, says something, then calls two tools, arguments in fragments.
CHUNKS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"reasoning_content": "First "}),
    chunk(
        {
            "reasoning_content": "read.",
            "thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "s1"}],
        }
    ),
    chunk({"content": "Reading "}),
    chunk({"content": "é files."}),
    chunk({"tool_calls": [tool_delta(0, "", "call_a", "read")]}),
    chunk({"tool_calls": [tool_delta(0, '{"path": ')]}),
    chunk({"tool_calls": [tool_delta(0, '"a.py"}')]}),
    chunk({"tool_calls": [tool_delta(1, '{"n": 1}', "call_b", "ls")]}),
    chunk({}, finish="tool_calls"),
    chunk(
        usage={
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 20},
        }
    ),
]


def relayed(chunks: Iterable[dict[str, Any]]) -> list[StreamEvent]:
    stream = AnthropicStream("claude-sonnet-4-5")
    events: list[StreamEvent] = []
    for each in chunks:
        events += stream.feed(each)
    return events + stream.finish()


def sdk_client(body: bytes) -> anthropic.Anthropic:
    """The SDK, answered by ``body`` as an event stream (no network)."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return anthropic.Anthropic(
        api_key="chronicle-token",
        base_url="http://gateway.test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
        max_retries=0,
    )


def stream_through_sdk(events: list[StreamEvent]) -> tuple[list[str], Message, str]:
    """What the SDK's ``messages.stream`` makes of the events: the event types it yields,
    the final message it accumulates and the text it streams."""
    client = sdk_client(b"".join(event.encoded() for event in events))
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "go"}]
    ) as stream:
        seen: list[str] = [event.type for event in stream]
        final = stream.get_final_message()
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "go"}]
    ) as again:
        text = "".join(again.text_stream)
    return seen, Message.model_validate(final.model_dump()), text


def test_the_sdk_accumulates_the_same_message_as_the_unstreamed_reply() -> None:
    events = relayed(CHUNKS)
    names = [event.event for event in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 4
    seen, final, text = stream_through_sdk(events)
    assert "input_json" in seen and "text" in seen and "thinking" in seen and "signature" in seen
    assert text == "Reading é files."
    assert [block.model_dump(exclude_none=True) for block in final.content] == [
        {"type": "thinking", "thinking": "First read.", "signature": "s1"},
        {"type": "text", "text": "Reading é files."},
        {"type": "tool_use", "id": "call_a", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "call_b", "name": "ls", "input": {"n": 1}},
    ]
    assert final.stop_reason == "tool_use"
    usage = final.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens) == (30, 9, 20)
    # the same reply, not streamed
    whole = {
        "id": "chatcmpl-9",
        "model": "gpt-4o-mini",
        "choices": [
            {
                "message": {
                    "content": "Reading é files.",
                    "reasoning_content": "First read.",
                    "thinking_blocks": [
                        {"type": "thinking", "thinking": "First read.", "signature": "s1"}
                    ],
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "function": {"name": "read", "arguments": '{"path": "a.py"}'},
                        },
                        {"id": "call_b", "function": {"name": "ls", "arguments": '{"n": 1}'}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 20},
        },
    }
    assert final.model_dump() == Message.model_validate(to_message(whole, model="x")).model_dump()


#: The SDK's model of each event of a message stream.
SDK_EVENTS: dict[str, type[Any]] = {
    "message_start": anthropic.types.RawMessageStartEvent,
    "content_block_start": anthropic.types.RawContentBlockStartEvent,
    "content_block_delta": anthropic.types.RawContentBlockDeltaEvent,
    "content_block_stop": anthropic.types.RawContentBlockStopEvent,
    "message_delta": anthropic.types.RawMessageDeltaEvent,
    "message_stop": anthropic.types.RawMessageStopEvent,
}


def test_each_event_is_one_the_sdk_models_and_on_the_wire_as_sse() -> None:
    for event in relayed(CHUNKS):
        wire = event.encoded().decode()
        name, data, blank = wire.split("\n", 2)
        assert name == f"event: {event.event}" and blank == "\n"
        assert json.loads(data.removeprefix("data: ")) == event.data
        assert event.data["type"] == event.event
        if event.event != "ping":
            SDK_EVENTS[event.event].model_validate(event.data)


def test_a_stream_that_says_nothing_is_still_a_whole_message() -> None:
    events = relayed([])
    assert [event.event for event in events] == [
        "message_start",
        "ping",
        "message_delta",
        "message_stop",
    ]
    _, final, text = stream_through_sdk(events)
    assert (final.content, final.stop_reason, text) == ([], "end_turn", "")


def test_a_cut_reply_stops_at_max_tokens() -> None:
    events = relayed([chunk({"content": "half"}), chunk({}, finish="length")])
    _, final, _ = stream_through_sdk(events)
    assert final.stop_reason == "max_tokens"


def test_an_error_after_the_start_reaches_the_sdk_as_its_typed_error() -> None:
    stream = AnthropicStream("claude-sonnet-4-5")
    events = stream.feed(chunk({"content": "par"}))
    events.append(error_event("overloaded_error", "the model went away mid-reply"))
    client = sdk_client(b"".join(event.encoded() for event in events))
    with pytest.raises(anthropic.APIStatusError) as caught:
        with client.messages.stream(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "go"}]
        ) as sdk_stream:
            for _ in sdk_stream:
                pass
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "the model went away mid-reply"},
    }


def test_finish_is_said_once() -> None:
    stream = AnthropicStream("m")
    assert stream.finish()
    assert stream.finish() == []


async def frames_of(chunks: list[dict[str, Any]], error: GatewayError | None) -> list[StreamEvent]:
    """The events ``stream_frames`` sends for these chunks of a call that ended so."""

    async def rest() -> AsyncIterator[dict[str, Any]]:
        for each in chunks[1:]:
            yield each

    call = CallStream()
    call.error = error
    first = chunks[0] if chunks else None
    sent = [frame async for frame in stream_frames(first, rest(), call, "claude-sonnet-4-5")]
    events = []
    for frame in sent:
        name, data, _ = frame.decode().split("\n", 2)
        events.append(StreamEvent(name.removeprefix("event: "), json.loads(data[6:])))
    return events


def test_a_call_that_fails_mid_stream_ends_with_an_error_event() -> None:
    cut = GatewayError(502, "upstream", "the model failed: connection reset")
    events = asyncio.run(frames_of([chunk({"content": "par"}), chunk({"content": "t"})], cut))
    assert [event.event for event in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "error",
    ]
    assert events[-1].data == {
        "type": "error",
        "error": {"type": "api_error", "message": "the model failed: connection reset"},
    }


def test_a_call_that_ended_without_chunks_is_still_a_whole_message() -> None:
    events = asyncio.run(frames_of([], None))
    names = ["message_start", "ping", "message_delta", "message_stop"]
    assert [event.event for event in events] == names
    assert events[2].data["delta"]["stop_reason"] == "end_turn"
