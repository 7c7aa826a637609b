"""A streamed chat completion, relayed as the server-sent events of Anthropic's Messages API.

OpenAI's chunks carry loose deltas (text, tool-call fragments by index, a finish reason, the
usage at the end); Anthropic's SDK reads a strict sequence: ``message_start``, then for each
content block ``content_block_start``, its deltas (``text_delta``, ``input_json_delta``,
``thinking_delta``, ``signature_delta``) and ``content_block_stop``, then ``message_delta``
with the stop reason and usage, then ``message_stop``; ``ping`` may come at any time, and an
``error`` event ends a stream that failed after it began. ``AnthropicStream`` turns one
into the other, chunk by chunk, without holding the reply back. Pure: no I/O.

``message_start`` goes out with the first chunk, not before: a call that fails before the
model says anything is then answered with an HTTP error, not a stream that holds one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, NamedTuple

from app.events import LlmUsage
from app.external.anthropic_protocol import error_type
from app.external.anthropic_reply import field, message_id, stop_reason, tool_use_id, usage_counts
from app.external.calls import CallStream
from app.llm.reply import read_usage


class StreamEvent(NamedTuple):
    """One server-sent event: its name and its JSON data."""

    event: str
    data: dict[str, Any]

    def encoded(self) -> bytes:
        """The event as it goes on the wire."""
        body = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"))
        return f"event: {self.event}\ndata: {body}\n\n".encode()


PING = StreamEvent("ping", {"type": "ping"})


def error_event(error_type: str, message: str) -> StreamEvent:
    """The ``error`` event of a stream that failed after it began (the SDK raises it)."""
    return StreamEvent(
        "error", {"type": "error", "error": {"type": error_type, "message": message}}
    )


class _Block(NamedTuple):
    """The content block being streamed: its kind and, for a tool use, the chunks' index."""

    kind: str
    tool_index: int | None = None


class AnthropicStream:
    """Turns the chunks of one streamed chat completion into Anthropic's events."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.started = False
        self.finished = False
        self._index = -1  # the Anthropic index of the open (or last) block
        self._open: _Block | None = None
        self._tool_use = False
        self._finish_reason: str | None = None
        self._raw_stop: str | None = None
        self._usage: LlmUsage | None = None

    def feed(self, chunk: Any) -> list[StreamEvent]:
        """The events for one chunk (litellm's ``ModelResponseStream`` or its JSON)."""
        events = self._start(chunk)
        usage = field(chunk, "usage")
        if usage:
            self._usage = read_usage(chunk)
        for choice in (field(chunk, "choices") or [])[:1]:
            delta = field(choice, "delta")
            events += self._thinking(delta)
            text = field(delta, "content")
            if isinstance(text, str) and text:
                events += self._block(_Block("text"), {"type": "text", "text": ""})
                events.append(self._delta({"type": "text_delta", "text": text}))
            for position, call in enumerate(field(delta, "tool_calls") or []):
                events += self._tool_call(call, position)
            finish = field(choice, "finish_reason")
            if isinstance(finish, str) and finish:
                self._finish_reason = finish
            fields = field(choice, "provider_specific_fields")
            if isinstance(fields, Mapping) and isinstance(fields.get("stop_reason"), str):
                self._raw_stop = fields["stop_reason"]
        return events

    def finish(self) -> list[StreamEvent]:
        """The events that end the message: the open block's stop, ``message_delta`` with
        the stop reason and the usage, ``message_stop``."""
        if self.finished:
            return []
        self.finished = True
        events = self._start(None) + self._close()
        counts = usage_counts(self._usage or LlmUsage())
        reason = stop_reason(self._finish_reason, tool_use=self._tool_use, raw=self._raw)
        events.append(
            StreamEvent(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": None},
                    "usage": counts,
                },
            )
        )
        events.append(StreamEvent("message_stop", {"type": "message_stop"}))
        return events

    @property
    def _raw(self) -> str | None:
        known = {"pause_turn", "refusal", "model_context_window_exceeded", "max_tokens"}
        return self._raw_stop if self._raw_stop in known else None

    def _start(self, chunk: Any) -> list[StreamEvent]:
        if self.started:
            return []
        self.started = True
        answered = field(chunk, "model")
        message: dict[str, Any] = {
            "id": message_id(field(chunk, "id")),
            "type": "message",
            "role": "assistant",
            "model": answered if isinstance(answered, str) and answered else self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [StreamEvent("message_start", {"type": "message_start", "message": message}), PING]

    def _close(self) -> list[StreamEvent]:
        if self._open is None:
            return []
        self._open = None
        return [
            StreamEvent("content_block_stop", {"type": "content_block_stop", "index": self._index})
        ]

    def _block(self, block: _Block, start: dict[str, Any]) -> list[StreamEvent]:
        """Open ``block`` (closing the one before) unless it is the open one."""
        if self._open == block:
            return []
        events = self._close()
        self._index += 1
        self._open = block
        events.append(
            StreamEvent(
                "content_block_start",
                {"type": "content_block_start", "index": self._index, "content_block": start},
            )
        )
        return events

    def _delta(self, delta: dict[str, Any]) -> StreamEvent:
        return StreamEvent(
            "content_block_delta",
            {"type": "content_block_delta", "index": self._index, "delta": delta},
        )

    def _thinking(self, delta: Any) -> list[StreamEvent]:
        """Thinking text (``reasoning_content``), its signature and redacted thinking, from
        litellm's ``thinking_blocks`` of an Anthropic model."""
        events: list[StreamEvent] = []
        reasoning = field(delta, "reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            events += self._block(
                _Block("thinking"), {"type": "thinking", "thinking": "", "signature": ""}
            )
            events.append(self._delta({"type": "thinking_delta", "thinking": reasoning}))
        for block in field(delta, "thinking_blocks") or []:
            kind = field(block, "type")
            if kind == "redacted_thinking":
                data = str(field(block, "data") or "")
                events += self._close()
                events += self._block(
                    _Block("redacted"), {"type": "redacted_thinking", "data": data}
                )
                events += self._close()
            elif kind == "thinking":
                signature = field(block, "signature")
                if isinstance(signature, str) and signature:
                    events += self._block(
                        _Block("thinking"), {"type": "thinking", "thinking": "", "signature": ""}
                    )
                    events.append(self._delta({"type": "signature_delta", "signature": signature}))
        return events

    def _tool_call(self, call: Any, position: int) -> list[StreamEvent]:
        """A tool call's fragment: its first opens a tool_use block, its arguments' text
        goes on as ``input_json_delta``."""
        index = field(call, "index")
        index = index if isinstance(index, int) else position
        function = field(call, "function")
        events: list[StreamEvent] = []
        block = _Block("tool_use", index)
        if self._open != block:
            name = field(function, "name")
            events += self._block(
                block,
                {
                    "type": "tool_use",
                    "id": tool_use_id(field(call, "id")),
                    "name": name if isinstance(name, str) else "",
                    "input": {},
                },
            )
            self._tool_use = True
        arguments = field(function, "arguments")
        if isinstance(arguments, str) and arguments:
            events.append(self._delta({"type": "input_json_delta", "partial_json": arguments}))
        return events


async def stream_frames(
    first: dict[str, Any] | None,
    rest: AsyncIterator[dict[str, Any]],
    stream: CallStream,
    model: str,
) -> AsyncIterator[bytes]:
    """The SSE frames of a streamed call (``ExternalCalls.stream``): the events of each
    chunk, then the end of the message, or an ``error`` event if the call failed after its
    first chunk."""
    relay = AnthropicStream(model)
    if first is not None:
        for event in relay.feed(first):
            yield event.encoded()
    async for chunk in rest:
        for event in relay.feed(chunk):
            yield event.encoded()
    failed = stream.error
    if failed is not None:
        yield error_event(error_type(failed.status), failed.message).encoded()
        return
    for event in relay.finish():
        yield event.encoded()
