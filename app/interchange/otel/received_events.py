"""Received spans as the log's events, by the GenAI semantic conventions (v1.41.1, and the
older attribute names instrumentations still send).

Each span of a session, in the order the spans ran, becomes:

- a model call (``gen_ai.operation.name`` ``chat``, ``text_completion`` or
  ``generate_content``): an ``llm.call``, its model, parameters (``gen_ai.request.*``),
  usage (input tokens include cache reads, as the conventions say), latency (the span's
  duration), response (``gen_ai.output.messages``' first choice: text, tool calls, finish
  reason; ``gen_ai.response.id`` / ``.model``) and, when the span carries its content
  (``gen_ai.input.messages``, ``gen_ai.system_instructions``), the messages it was sent,
  stored by content hash and fingerprinted as a live call's are (OpenAI's chat shape), so a
  replay can serve and compare them. A failed call (status ERROR or ``error.type``) records
  ``error`` and ``error_kind``.
- a tool execution (``execute_tool``): an ``imported`` action (``gen_ai.tool.name``, the
  arguments when sent, ``gen_ai.tool.call.id``) caused by the model call that asked for it
  when that call is in the same batch, and its ``imported.output`` (the result when sent; an
  error's type and message).
- any other span (``invoke_agent``, an HTTP request, the application's own): an ``otel.span``
  with everything it carried. The root ``invoke_agent`` span also ends the session's run: an
  ``agent.state`` ``finished`` (``error`` when the span failed).

Every event names its span in ``imported`` (format ``otlp``, ``id`` trace/span) and has an id
derived from the session and the span, so a span settled twice is the same event. Pure.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import orjson

from app.events import (
    AgentState,
    Event,
    ImportedAction,
    ImportedOutput,
    ImportOrigin,
    LlmCall,
    LlmResponse,
    LlmUsage,
    OtelSpan,
    ToolCall,
    canonical_json,
)
from app.events.usage import safe_copy, token_count
from app.interchange.otel.indexed_messages import COMPLETION, PROMPT, indexed_messages
from app.interchange.otel.received import ReceivedSpan
from app.llm.fingerprint import content_hash, fingerprint, stable_hash

CHAT_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OPERATION = "execute_tool"
AGENT_OPERATION = "invoke_agent"
FORMAT = "otlp"
#: ``gen_ai.request.*`` attribute -> the call parameter it records.
_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.max_tokens": "max_tokens",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.top_k": "top_k",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.presence_penalty": "presence_penalty",
    "gen_ai.request.stop_sequences": "stop",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.choice.count": "n",
}


#: The tools hash of a call offered none (a live call's is the same: ``{"tools": []}``).
_NO_TOOLS = content_hash({"tools": []})


@dataclass
class SettledEvents:
    """What a batch of spans became: events in order, each with the span it came from, and
    the prompt messages they name (content hash -> canonical JSON)."""

    events: list[tuple[ReceivedSpan, Event]] = field(default_factory=list)
    messages: dict[str, str] = field(default_factory=dict)


def operation(span: ReceivedSpan) -> str:
    """The span's GenAI operation, or "" for a span that is not one."""
    attributes = span.attributes
    name = attributes.get("gen_ai.operation.name")
    if isinstance(name, str) and name:
        return name
    if attributes.get("llm.request.type") in ("chat", "completion"):  # OpenLLMetry's
        return "chat"
    if "gen_ai.system" in attributes or "gen_ai.provider.name" in attributes:
        # instrumentations older than the operation name: a model call by its span's name
        first = span.name.split(" ", 1)[0].lower()
        if first in CHAT_OPERATIONS or first in ("completion", "openai.chat", "anthropic.chat"):
            return "chat"
    return ""


def span_events(
    session_id: UUID,
    first_seq: int,
    spans: Iterable[ReceivedSpan],
    *,
    root_ids: set[str],
    earlier_calls: Mapping[str, int] | None = None,
) -> SettledEvents:
    """The events of ``spans`` (of one session, in the order they ran), the first at seq
    ``first_seq``; ``root_ids``: the span ids that are their trace's root; ``earlier_calls``:
    tool call id -> seq of the ``llm.call`` already in the session that asked for it (a tool
    span settled after its model call's page is caused by it all the same)."""
    settled = SettledEvents()
    calls: dict[str, int] = dict(earlier_calls or {})  # tool call id -> the llm.call's seq
    add = settled.events.append
    for span in spans:
        seq = first_seq + len(settled.events)
        operation_name = operation(span)
        if operation_name in CHAT_OPERATIONS:
            call = _model_call(span, settled.messages, _origin(session_id, span, "call"))
            add((span, call))
            for tool_call in call.response.tool_calls:
                calls.setdefault(tool_call.id, seq)
        elif operation_name == TOOL_OPERATION:
            action, output = _tool_use(
                span,
                calls,
                seq,
                _origin(session_id, span, "tool_call"),
                _origin(session_id, span, "result"),
            )
            add((span, action))
            add((span, output))
        else:
            add((span, _kept(span, _origin(session_id, span, "span"))))
            if operation_name == AGENT_OPERATION and span.span_id in root_ids:
                state = AgentState(
                    state="error" if _error_type(span) else "finished",
                    reason=_error_text(span) or "the agent's root span ended",
                    **_origin(session_id, span, "end"),
                )
                add((span, state))
    return settled


def tool_call_ids(spans: Iterable[ReceivedSpan]) -> set[str]:
    """The tool call ids the tool spans among ``spans`` answer."""
    return {
        call_id
        for span in spans
        if operation(span) == TOOL_OPERATION
        and (call_id := _text(span.attributes.get("gen_ai.tool.call.id")))
    }


def event_id(session_id: UUID, span: ReceivedSpan, part: str) -> UUID:
    return uuid.uuid5(session_id, f"otlp\n{span.trace_id}\n{span.span_id}\n{part}")


def _origin(session_id: UUID, span: ReceivedSpan, part: str) -> dict[str, Any]:
    """The envelope of the event ``part`` of a span: its derived id and where it came from
    (given to the event's constructor: a copy with them after was a fifth of the mapping)."""
    return {
        "event_id": event_id(session_id, span, part),
        "imported": ImportOrigin(
            format=FORMAT,
            file=span.service or "otlp",
            id=f"{span.trace_id}/{span.span_id}",
            field=part,
        ),
    }


# --- model calls ------------------------------------------------------------------------


def _model_call(
    span: ReceivedSpan, messages: dict[str, str], envelope: Mapping[str, Any]
) -> LlmCall:
    attributes = span.attributes
    model = _text(attributes.get("gen_ai.request.model")) or _text(
        attributes.get("gen_ai.response.model")
    )
    params = {
        name: attributes[key] for key, name in _PARAMS.items() if attributes.get(key) is not None
    }
    sent = _json(attributes.get("gen_ai.input.messages"))
    if sent is None:  # an instrumentation that writes each message's fields apart
        sent = indexed_messages(attributes, PROMPT)
    prompt = chat_messages(sent, _json(attributes.get("gen_ai.system_instructions")))
    tools = _json(attributes.get("gen_ai.tool.definitions"))
    hashes = [_store(message, messages) for message in prompt]
    if isinstance(tools, list) and tools:
        tools_hash = _store({"tools": tools}, messages)
    else:
        tools_hash = _NO_TOOLS
    output = _json(attributes.get("gen_ai.output.messages"))
    if output is None:
        output = indexed_messages(attributes, COMPLETION)
    content, tool_calls, finish = _first_choice(output)
    reasons = attributes.get("gen_ai.response.finish_reasons")
    if finish is None and isinstance(reasons, list) and reasons:
        finish = _text(reasons[0]) or None
    error = _error_type(span)
    return LlmCall(
        model=model or "unknown",
        params=params,
        fingerprint=fingerprint(
            model or "unknown", [stable_hash(message) for message in prompt], tools_hash, params
        ),
        prompt=hashes,
        tools=None if tools_hash == _NO_TOOLS else tools_hash,
        response=LlmResponse(
            content=content,
            tool_calls=tool_calls,
            finish_reason=finish,
            id=_text(attributes.get("gen_ai.response.id")) or None,
            model=_text(attributes.get("gen_ai.response.model")) or None,
        ),
        usage=_usage(attributes),
        latency_ms=_duration_ms(span),
        error=(_error_text(span) or error) if error else None,
        error_kind=error or None,
        **envelope,
    )


#: usage field -> the span attributes that carry it (the conventions' name, then the older).
_USAGE_ATTRIBUTES = {
    "prompt_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "completion_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "cached_tokens": ("gen_ai.usage.cache_read.input_tokens",),
    "cache_creation_tokens": ("gen_ai.usage.cache_creation.input_tokens",),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens",),
}
#: Counts a span that does not carry them has as 0 (the others None), as a reply's
#: (``app.llm.reply.read_usage``).
_ZERO_WHEN_ABSENT = frozenset({"prompt_tokens", "completion_tokens", "cached_tokens"})


def _usage(attributes: Mapping[str, Any]) -> LlmUsage:
    """The call's token counts by the log's rule (``app.events.usage``): a count the span does
    not carry is 0 (None for the optional ones), one it carries that is not a count is None,
    unknown, and the usage attributes as sent are kept in ``as_sent``."""
    counts: dict[str, int | None] = {}
    sent: dict[str, Any] = {}
    unreadable = False
    for usage_field, names in _USAGE_ATTRIBUTES.items():
        name = next((name for name in names if name in attributes), None)
        if name is None:
            counts[usage_field] = 0 if usage_field in _ZERO_WHEN_ABSENT else None
            continue
        sent[name] = attributes[name]
        counts[usage_field] = token_count(attributes[name])
        unreadable = unreadable or counts[usage_field] is None
    prompt, completion = counts["prompt_tokens"], counts["completion_tokens"]
    total = None if prompt is None or completion is None else prompt + completion
    return LlmUsage(**counts, total_tokens=total, as_sent=safe_copy(sent) if unreadable else None)


def chat_messages(input_messages: Any, system_instructions: Any = None) -> list[dict[str, Any]]:
    """The conventions' messages (role and parts) in OpenAI's chat shape, which Chronicle's
    prompts are stored in: text parts joined as the content, tool calls as ``tool_calls``,
    each tool call response as a ``tool`` message of its own."""
    chat: list[dict[str, Any]] = []
    if isinstance(system_instructions, list) and system_instructions:
        chat.append({"role": "system", "content": _parts_text(system_instructions)})
    if not isinstance(input_messages, list):
        return chat
    for message in input_messages:
        if not isinstance(message, dict):
            continue
        role = _text(message.get("role")) or "user"
        parts = message.get("parts")
        if not isinstance(parts, list):  # a message in OpenAI's shape already
            chat.append(message)
            continue
        by_type: dict[str, list[Any]] = {"tool_call": [], "tool_call_response": [], "": []}
        for part in parts:
            kind = part.get("type") if isinstance(part, dict) else None
            by_type[kind if kind in ("tool_call", "tool_call_response") else ""].append(part)
        calls, answers, rest = by_type["tool_call"], by_type["tool_call_response"], by_type[""]
        if rest or calls or not answers:
            entry: dict[str, Any] = {"role": role}
            if rest or not calls:  # a message of tool calls alone has no content (OpenAI's)
                entry["content"] = _parts_content(rest)
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": _text(call.get("id")),
                        "type": "function",
                        "function": {
                            "name": _text(call.get("name")),
                            "arguments": _arguments_text(call.get("arguments")),
                        },
                    }
                    for call in calls
                ]
            if isinstance(message.get("name"), str):
                entry["name"] = message["name"]
            chat.append(entry)
        for answer in answers:
            chat.append(
                {
                    "role": "tool",
                    "tool_call_id": _text(answer.get("id")),
                    "content": _result_text(answer.get("response", answer.get("result"))),
                }
            )
    return chat


def _first_choice(output: Any) -> tuple[str | None, list[ToolCall], str | None]:
    if not isinstance(output, list) or not output or not isinstance(output[0], dict):
        return None, [], None
    choice = output[0]
    given = choice.get("parts")
    parts: list[Any] = given if isinstance(given, list) else []
    texts = [
        _text(part.get("content"))
        for part in parts
        if isinstance(part, dict) and part.get("type") == "text"
    ]
    calls = [
        ToolCall(
            id=_text(part.get("id")) or f"call_{index}",
            name=_text(part.get("name")),
            arguments=_arguments_text(part.get("arguments")),
        )
        for index, part in enumerate(parts)
        if isinstance(part, dict) and part.get("type") == "tool_call"
    ]
    finish = _text(choice.get("finish_reason")) or None
    return ("".join(texts) if texts else None), calls, finish


# --- tool executions --------------------------------------------------------------------


def _tool_use(
    span: ReceivedSpan,
    calls: Mapping[str, int],
    seq: int,
    action_envelope: Mapping[str, Any],
    output_envelope: Mapping[str, Any],
) -> tuple[ImportedAction, ImportedOutput]:
    """The action (at ``seq``) and its output (after it, answering it) of a tool span."""
    attributes = span.attributes
    call_id = _text(attributes.get("gen_ai.tool.call.id")) or None
    arguments = _json(attributes.get("gen_ai.tool.call.arguments"))
    if arguments is not None and not isinstance(arguments, dict):
        arguments = {"input": arguments}
    tool = _text(attributes.get("gen_ai.tool.name")) or span.name.removeprefix("execute_tool ")
    action = ImportedAction(
        tool=tool or "unknown",
        arguments=arguments or {},
        tool_call_id=call_id,
        cause=calls.get(call_id) if call_id else None,
        **action_envelope,
    )
    error = _error_type(span)
    extras: dict[str, Any] = {}
    if error:
        extras["error_type"] = error
        if span.status_message:
            extras["error"] = span.status_message
    for key in ("gen_ai.tool.type", "gen_ai.tool.description"):
        if key in attributes:
            extras[key] = attributes[key]
    output = ImportedOutput(
        observation="error" if error else "result",
        content=_result_text(attributes.get("gen_ai.tool.call.result")),
        extras=extras,
        cause=seq,
        **output_envelope,
    )
    return action, output


# --- other spans ------------------------------------------------------------------------


def _kept(span: ReceivedSpan, envelope: Mapping[str, Any]) -> OtelSpan:
    return OtelSpan(
        name=span.name,
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        span_kind=span.kind,
        start_ns=max(0, span.start_ns),
        end_ns=max(0, span.end_ns),
        attributes=span.attributes,
        events=[event.model_dump() for event in span.events],
        status_code=span.status_code,
        status_message=span.status_message,
        service=span.service,
        scope=span.scope,
        **envelope,
    )


# --- values -----------------------------------------------------------------------------


def _error_type(span: ReceivedSpan) -> str:
    kind = span.attributes.get("error.type")
    if isinstance(kind, str) and kind:
        return kind
    return "_OTHER" if span.failed else ""


def _error_text(span: ReceivedSpan) -> str:
    if span.status_message:
        return span.status_message
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message")
            kind = event.attributes.get("exception.type")
            if isinstance(message, str):
                return f"{kind}: {message}" if isinstance(kind, str) else message
    return ""


def _duration_ms(span: ReceivedSpan) -> float | None:
    if span.end_ns <= 0 or span.start_ns <= 0 or span.end_ns < span.start_ns:
        return None
    return (span.end_ns - span.start_ns) / 1e6


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _json(value: Any) -> Any:
    """An attribute that may hold JSON as a string (the conventions' form on spans) or as a
    structured value (arrays and key-value lists)."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _arguments_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    return canonical_json(value)


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return canonical_json(value)


def _parts_text(parts: list[Any]) -> str:
    return "".join(
        _text(part.get("content"))
        for part in parts
        if isinstance(part, dict) and part.get("type") in ("text", None)
    )


def _parts_content(parts: list[Any]) -> str | list[dict[str, Any]] | None:
    """Text parts as one string; anything else (an image, a file) as a list of parts."""
    if not parts:
        return None
    if all(isinstance(part, dict) and part.get("type") == "text" for part in parts):
        return "".join(_text(part.get("content")) for part in parts)
    return [
        part if isinstance(part, dict) else {"type": "unknown", "value": part} for part in parts
    ]


def _store(value: Any, messages: dict[str, str]) -> str:
    key = content_hash(value)
    messages[key] = canonical_json(value)
    return key
