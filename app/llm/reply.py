"""Reading a chat-completion reply into what Chronicle records, whatever shape it came in.

Servers behind an OpenAI-compatible URL send replies litellm passes on as they are: no
``choices``, tool calls without an id (or two with the same one), arguments as an object
instead of a JSON string, content as a list of parts, usage counts as strings. None of that
may crash a run after the call was paid for: the reply is read field by field, and what makes
it unusable becomes ``problem``, recorded on the ``llm.call`` and shown to the model.

Works on litellm's response objects and on plain dicts (the JSON a server sent) alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from app.events import LlmUsage, ToolCall
from app.llm.text_tools import parse_tool_calls

NO_CHOICES = "the model returned no choices"


class ReadReply(NamedTuple):
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: LlmUsage
    #: Why nothing in the reply can be used (then content and tool_calls are empty).
    problem: str | None = None


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _count(value: Any) -> int:
    """A token count as sent (an int, 12.0, "12"), or 0 when it is none of those."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return max(int(value), 0)
    return 0


def read_usage(response: Any) -> LlmUsage:
    raw = _field(response, "usage")
    details = _field(raw, "prompt_tokens_details")
    return LlmUsage(
        prompt_tokens=_count(_field(raw, "prompt_tokens")),
        completion_tokens=_count(_field(raw, "completion_tokens")),
        total_tokens=_count(_field(raw, "total_tokens")),
        cached_tokens=_count(_field(details, "cached_tokens")),
    )


def _text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a list of parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [_field(part, "text") for part in content]
        return "".join(part for part in parts if isinstance(part, str))
    return json.dumps(content, ensure_ascii=False, default=str)


def _arguments(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _tool_calls(message: Any) -> list[ToolCall]:
    """The native tool calls, each with an id unique within the reply."""
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for index, raw in enumerate(_field(message, "tool_calls") or []):
        function = _field(raw, "function")
        call_id = _field(raw, "id")
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = f"call-{index}"
            while call_id in seen:
                call_id += "-"
        seen.add(call_id)
        name = _field(function, "name")
        calls.append(
            ToolCall(
                id=call_id,
                name=name if isinstance(name, str) else "",
                arguments=_arguments(_field(function, "arguments")),
            )
        )
    return calls


def read_reply(response: Any, tools: list[dict[str, Any]], *, prompt_tools: bool) -> ReadReply:
    """The first choice's text, tool calls and finish reason, and the usage.

    With ``prompt_tools`` (tools were described in the prompt), calls written as text are
    parsed from the content, unless the reply carries native tool calls: those are used as
    they came, never dropped.
    """
    usage = read_usage(response)
    choices = _field(response, "choices")
    if not isinstance(choices, list) or not choices:
        return ReadReply(None, [], None, usage, NO_CHOICES)
    choice = choices[0]
    message = _field(choice, "message")
    finish = _field(choice, "finish_reason")
    finish = finish if isinstance(finish, str) else None
    if message is None:
        return ReadReply(None, [], finish, usage, "the model's reply has no message")
    content = _text(_field(message, "content"))
    calls = _tool_calls(message)
    if prompt_tools and tools and content and not calls:
        content, calls = parse_tool_calls(content, tools)
    return ReadReply(content, calls, finish, usage)
