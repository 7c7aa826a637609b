"""Reading a chat-completion reply into what Chronicle records, whatever shape it came in.

Servers behind an OpenAI-compatible URL send replies litellm passes on as they are: no
``choices``, tool calls without an id (or two with the same one), arguments as an object
instead of a JSON string, content as a list of parts, usage counts as strings (or as
``1e999``, ``"abc"``: then unknown, see ``app.events.usage``). None of that
may crash a run after the call was paid for: the reply is read field by field, and what makes
it unusable becomes ``problem``, recorded on the ``llm.call`` and shown to the model.

Works on litellm's response objects and on plain dicts (the JSON a server sent) alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from app.events import LlmUsage, ToolCall
from app.events.usage import safe_copy, token_count
from app.llm.text_tools import parse_tool_calls

NO_CHOICES = "the model returned no choices"


class ReadReply(NamedTuple):
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: LlmUsage
    #: Why nothing in the reply can be used (then content and tool_calls are empty).
    problem: str | None = None
    reasoning_content: str | None = None
    #: the reply's own id and the model that answered, as sent
    response_id: str | None = None
    response_model: str | None = None


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


#: Where each count of ``LlmUsage`` is sent: OpenAI's names first, then Anthropic's (which
#: litellm passes on), then litellm's own; ``None`` means the usage object itself.
_SENT_AS: dict[str, list[tuple[str | None, str]]] = {
    "prompt_tokens": [(None, "prompt_tokens")],
    "completion_tokens": [(None, "completion_tokens")],
    "total_tokens": [(None, "total_tokens")],
    "cached_tokens": [
        ("prompt_tokens_details", "cached_tokens"),
        (None, "cache_read_input_tokens"),
    ],
    "cache_creation_tokens": [
        (None, "cache_creation_input_tokens"),
        ("prompt_tokens_details", "cache_creation_tokens"),
        ("prompt_tokens_details", "cache_write_tokens"),
    ],
    "reasoning_tokens": [("completion_tokens_details", "reasoning_tokens")],
}
#: Counts a reply that does not send them had as 0 before (the others are None: not sent).
_ZERO_WHEN_ABSENT = frozenset(
    {"prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens"}
)


def _sent(raw: Any, field: str) -> Any:
    """The first value sent for ``field`` (None when the reply has none)."""
    for container, name in _SENT_AS[field]:
        value = _field(_field(raw, container) if container else raw, name)
        if value is not None:
            return value
    return None


def _as_sent(raw: Any) -> dict[str, Any]:
    """The usage object as the server sent it (litellm's model, or the parsed JSON)."""
    if hasattr(raw, "model_dump"):
        try:
            raw = raw.model_dump(warnings=False)
        except Exception:  # a model that cannot dump its own odd values
            raw = dict(vars(raw))
    copied = safe_copy(raw)
    return copied if isinstance(copied, dict) else {"usage": copied}


def read_usage(response: Any) -> LlmUsage:
    """The usage of a reply: each count as sent, or None (unknown) when what was sent is not
    a count (``app.events.usage``); then the usage as sent is kept too."""
    raw = _field(response, "usage")
    counts: dict[str, int | None] = {}
    unreadable = False
    for field in _SENT_AS:
        value = _sent(raw, field)
        count = token_count(value)
        if value is None:
            count = 0 if field in _ZERO_WHEN_ABSENT else None
        elif count is None:
            unreadable = True
        counts[field] = count
    return LlmUsage(**counts, as_sent=_as_sent(raw) if unreadable else None)


def _reasoning(message: Any) -> str | None:
    """The reasoning text a model sent with its answer (``reasoning_content``; some servers
    call it ``reasoning``)."""
    for name in ("reasoning_content", "reasoning"):
        text = _text(_field(message, name))
        if text:
            return text
    return None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


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
    sent = {
        "response_id": _text_or_none(_field(response, "id")),
        "response_model": _text_or_none(_field(response, "model")),
    }
    choices = _field(response, "choices")
    if not isinstance(choices, list) or not choices:
        return ReadReply(None, [], None, usage, NO_CHOICES, **sent)
    choice = choices[0]
    message = _field(choice, "message")
    finish = _field(choice, "finish_reason")
    finish = finish if isinstance(finish, str) else None
    if message is None:
        return ReadReply(None, [], finish, usage, "the model's reply has no message", **sent)
    content = _text(_field(message, "content"))
    calls = _tool_calls(message)
    if prompt_tools and tools and content and not calls:
        content, calls = parse_tool_calls(content, tools)
    return ReadReply(content, calls, finish, usage, None, _reasoning(message), **sent)
