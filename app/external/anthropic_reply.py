"""A chat-completions reply, written back as the Message Anthropic's API would have sent.

The upstream answered in OpenAI's shape (litellm's response object, or the JSON of one); an
agent on Anthropic's SDK expects content blocks, a ``stop_reason`` it acts on (``tool_use``
means "run the tools and send their results") and Anthropic's usage, whose ``input_tokens``
leave out the tokens read from or written to the cache (OpenAI's ``prompt_tokens``, and
litellm's for an Anthropic model, count them in). Pure: no I/O.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from app.events import LlmUsage
from app.external import openai_protocol
from app.external.calls import ChatRequest
from app.llm import LlmReply
from app.llm.reply import read_usage

#: Stop reasons Anthropic's API sends as they are (litellm passes the raw one on for these).
_ANTHROPIC_STOP_REASONS = frozenset(
    {
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)

#: Chat-completions finish reasons in Anthropic's words.
_FINISH_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}

#: The key a tool call's arguments are kept under when they are not a JSON object (a
#: tool_use block's ``input`` must be one): the agent's own tool check then tells the model.
UNPARSED_ARGUMENTS = "_unparsed_arguments"


def field(value: Any, name: str) -> Any:
    """``value[name]`` of a dict, or its attribute (litellm's objects); None when absent."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def message_id(reply_id: Any) -> str:
    """A Message id (``msg_...``) from the upstream's id, or a new one."""
    if isinstance(reply_id, str) and reply_id:
        return reply_id if reply_id.startswith("msg_") else f"msg_{reply_id}"
    return f"msg_{uuid.uuid4().hex}"


def tool_use_id(call_id: Any) -> str:
    return call_id if isinstance(call_id, str) and call_id else f"toolu_{uuid.uuid4().hex}"


def tool_input(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as a tool_use block's ``input`` (an object; see
    ``UNPARSED_ARGUMENTS`` for arguments that are not one)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if arguments is None or arguments == "":
        return {}
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    return {UNPARSED_ARGUMENTS: arguments if isinstance(arguments, str) else str(arguments)}


def _raw_stop(*holders: Any) -> tuple[str | None, str | None]:
    """The stop reason and stop sequence an Anthropic upstream sent, when litellm kept them
    (``provider_specific_fields``); (None, None) otherwise."""
    for holder in holders:
        fields = field(holder, "provider_specific_fields")
        if isinstance(fields, Mapping):
            reason = fields.get("stop_reason")
            if reason in _ANTHROPIC_STOP_REASONS:
                sequence = fields.get("stop_sequence")
                return reason, sequence if isinstance(sequence, str) else None
    return None, None


def stop_reason(finish_reason: Any, *, tool_use: bool, raw: str | None = None) -> str:
    """Anthropic's stop reason for a reply. With tool calls it is ``tool_use`` (what makes an
    agent run them) unless the reply was cut at ``max_tokens``, whatever the finish reason
    (some servers say ``stop``). A stop on one of the request's ``stop_sequences`` is
    ``end_turn`` unless the upstream said which (OpenAI's replies do not)."""
    if raw is not None and not (tool_use and raw == "end_turn"):
        return raw
    reason = (
        _FINISH_REASONS.get(finish_reason, "end_turn")
        if isinstance(finish_reason, str)
        else "end_turn"
    )
    if tool_use and reason != "max_tokens":
        return "tool_use"
    return reason


def usage_counts(usage: LlmUsage) -> dict[str, int]:
    """Anthropic's usage from the recorded counts (an unknown count is sent as 0)."""
    cache_read = usage.cached_tokens or 0
    cache_write = usage.cache_creation_tokens or 0
    prompt = usage.prompt_tokens or 0
    return {
        "input_tokens": max(prompt - cache_read - cache_write, 0),
        "output_tokens": usage.completion_tokens or 0,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [field(part, "text") for part in content]
        return "".join(text for text in texts if isinstance(text, str))
    return ""


def thinking_blocks(message: Any) -> list[dict[str, Any]]:
    """The reply's thinking as Anthropic's blocks: litellm's signed ``thinking_blocks`` of
    an Anthropic model, else a model's ``reasoning_content`` (unsigned)."""
    blocks: list[dict[str, Any]] = []
    for block in field(message, "thinking_blocks") or []:
        kind = field(block, "type")
        if kind == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": str(field(block, "data") or "")})
        elif kind == "thinking":
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": str(field(block, "thinking") or ""),
                    "signature": str(field(block, "signature") or ""),
                }
            )
    if not blocks:
        reasoning = field(message, "reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    return blocks


def to_message(reply: Any, *, model: str) -> dict[str, Any]:
    """The Anthropic Message for a chat completion (its first choice). ``model`` names the
    model when the reply does not."""
    choices = field(reply, "choices") or []
    choice = choices[0] if choices else None
    message = field(choice, "message")
    content: list[dict[str, Any]] = thinking_blocks(message)
    text = _text(field(message, "content"))
    if text:
        content.append({"type": "text", "text": text})
    for call in field(message, "tool_calls") or []:
        function = field(call, "function")
        name = field(function, "name")
        content.append(
            {
                "type": "tool_use",
                "id": tool_use_id(field(call, "id")),
                "name": name if isinstance(name, str) else "",
                "input": tool_input(field(function, "arguments")),
            }
        )
    raw, sequence = _raw_stop(choice, message)
    reason = stop_reason(
        field(choice, "finish_reason"),
        tool_use=any(block["type"] == "tool_use" for block in content),
        raw=raw,
    )
    answered = field(reply, "model")
    return {
        "id": message_id(field(reply, "id")),
        "type": "message",
        "role": "assistant",
        "model": answered if isinstance(answered, str) and answered else model,
        "content": content,
        "stop_reason": reason,
        "stop_sequence": sequence if reason == "stop_sequence" else None,
        "usage": usage_counts(read_usage(reply)),
    }


def reply_message(reply: LlmReply, request: ChatRequest, model: str) -> dict[str, Any]:
    """A recorded call (``ExternalCalls.complete``) as the Message the agent reads."""
    return to_message(openai_protocol.completion(reply, request), model=model)
