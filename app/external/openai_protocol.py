"""OpenAI's chat-completions protocol: its requests into ``ChatRequest``, replies, stream
chunks and errors back in the shapes OpenAI's SDKs parse.

- ``chat_request(body)``: the parsed JSON body (``POST /v1/chat/completions``) as a
  ``ChatRequest``; ``GatewayError`` 400 for what is not one;
- ``completion(reply, request)``: a recorded call (``LlmReply``) as a ``chat.completion``;
- ``stream_frames(first, rest, stream, request)``: SSE frames (``data: {chunk}``), ending with
  the call's error if it failed mid-way and ``data: [DONE]``;
- ``error_body(status, message, code)``: ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

from app.events import LlmUsage
from app.external.calls import CallStream, ChatRequest
from app.external.errors import invalid_request
from app.llm import LlmReply

#: Keys of the body that are not parameters passed on.
_OWN_KEYS = frozenset({"model", "messages", "tools", "stream", "stream_options"})
#: OpenAI's error ``type`` for each status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def chat_request(body: Any) -> ChatRequest:
    """The request a client sent (its JSON, parsed)."""
    if not isinstance(body, dict):
        raise invalid_request("the body must be a JSON object (a chat completion request)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid_request("'messages' must be a non-empty list", code="invalid_messages")
    if not all(isinstance(message, dict) for message in messages):
        raise invalid_request("each message must be an object", code="invalid_messages")
    tools = body.get("tools")
    if tools is None:
        tools = []
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        raise invalid_request("'tools' must be a list of objects", code="invalid_tools")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise invalid_request("'stream' must be true or false")
    options = body.get("stream_options")
    stream_usage = isinstance(options, dict) and options.get("include_usage") is True
    model = body.get("model")
    params = {key: value for key, value in body.items() if key not in _OWN_KEYS}
    return ChatRequest(
        model=model if isinstance(model, str) else "",
        messages=messages,
        tools=tools,
        params=params,
        stream=bool(stream),
        stream_usage=stream_usage,
    )


def usage_json(usage: LlmUsage) -> dict[str, Any]:
    """The usage as OpenAI writes it (an unknown count as 0: the SDKs want numbers)."""
    body: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens or 0,
        "completion_tokens": usage.completion_tokens or 0,
        "total_tokens": usage.total_tokens or 0,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens or 0},
    }
    if usage.reasoning_tokens is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return body


def completion(reply: LlmReply, request: ChatRequest) -> dict[str, Any]:
    """The recorded call as the ``chat.completion`` the client reads."""
    response = reply.call.response
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
    if response.reasoning_content:
        message["reasoning_content"] = response.reasoning_content
    # a replay's served call is answered before its event is appended: the call's own id
    event_id = reply.event.event_id if reply.event is not None else reply.call.event_id
    return {
        "id": response.id or f"chatcmpl-{event_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": response.model or request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or "stop",
                "logprobs": None,
            }
        ],
        "usage": usage_json(reply.call.usage),
    }


def error_type(status: int) -> str:
    if status in _ERROR_TYPES:
        return _ERROR_TYPES[status]
    return "server_error" if status >= 500 else "invalid_request_error"


def error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error document (a spent quota has its own type, as OpenAI writes it)."""
    kind = "insufficient_quota" if code == "insufficient_quota" else error_type(status)
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def sse(data: Any) -> bytes:
    """One SSE frame of JSON (a lone surrogate in a model's text written as its escape)."""
    try:
        text = orjson.dumps(data)
    except TypeError:  # orjson refuses lone surrogates
        text = json.dumps(data, separators=(",", ":")).encode()
    return b"data: " + text + b"\n\n"


async def stream_frames(
    first: dict[str, Any] | None,
    rest: AsyncIterator[dict[str, Any]],
    stream: CallStream,
    request: ChatRequest,
) -> AsyncIterator[bytes]:
    """The SSE frames of a streamed call: each chunk (the usage chunk only when the client
    asked for it), then the error if the call failed after its first chunk, then ``[DONE]``."""

    def framed(chunk: dict[str, Any]) -> bytes | None:
        if not chunk["choices"] and "usage" in chunk and not request.stream_usage:
            return None
        if not request.stream_usage:
            chunk.pop("usage", None)
        if not chunk["choices"] and "usage" not in chunk:
            return None
        return sse(chunk)

    if first is not None:
        frame = framed(first)
        if frame is not None:
            yield frame
    async for chunk in rest:
        frame = framed(chunk)
        if frame is not None:
            yield frame
    if stream.error is not None:
        yield sse(error_body(stream.error.status, stream.error.message, stream.error.code))
    yield b"data: [DONE]\n\n"
