"""A session's events as OpenTelemetry spans, by the GenAI semantic conventions v1.41.1
(the last release of ``docs/gen-ai/`` in open-telemetry/semantic-conventions).

One trace per session: an ``invoke_agent {agent}`` span (INTERNAL) over the whole log, and
under it a ``chat {model}`` span (CLIENT) per ``llm.call`` and an ``execute_tool {tool}``
span (INTERNAL) per action a service answers, from the action to its observation. A model
call is recorded when it ends, so its span ends at the event and starts ``latency_ms``
before. Errors set the span's status to ERROR and ``error.type`` (the call's
``error_kind``; the observation's ``error_type``, ``timed_out`` or ``exit_code``).

Message contents and tool arguments and results are opt-in (``content``), as the conventions
make them: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` as JSON strings in the
conventions' shape (role and parts), ``gen_ai.tool.call.arguments`` / ``.result``. What they
hold is what the log holds, masked as the log was at its door.

Pure: the events and the prompt's messages (by content hash) in, spans out; the encoding to
OTLP is elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal, NamedTuple, TypeGuard
from uuid import UUID

import orjson

from app.events.observations import answer_failure
from app.events.prompts import whole_prompts
from app.events.registry import AWAITED_KINDS, OBSERVATION_KINDS
from app.projections.otlp.ids import SESSION_SPAN, span_id, trace_id
from app.store import RecordedEvent

#: The version of the GenAI semantic conventions these spans follow.
SEMCONV_VERSION = "1.41.1"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

#: A span attribute's value, as OTLP carries it.
AttributeValue = str | bool | int | float | list[str]

#: litellm's provider prefixes whose GenAI ``gen_ai.provider.name`` differs (the rest are
#: the same word); the SQL function ``chronicle_gen_ai_provider`` says the same.
_PROVIDERS = {
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
}
#: ``gen_ai.provider.name`` when the model names none (the attribute is required).
UNKNOWN_PROVIDER = "_OTHER"
#: usage field -> the conventions' attribute
_USAGE = {
    "prompt_tokens": "gen_ai.usage.input_tokens",
    "completion_tokens": "gen_ai.usage.output_tokens",
    "cached_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_creation_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
}
#: request parameter -> the conventions' attribute
_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
}
#: Payload fields no span carries unless contents are sent (an llm.call's prompt hashes, the
#: longest field of a long session's calls): a reader of spans without contents leaves them
#: out of its read (``EventStore.read``'s ``leave_out``).
UNSENT_FIELDS = ("prompt",)
#: An event's fields that are not the tool's arguments or result (the envelope, the thought).
_ENVELOPE = frozenset(
    {"kind", "source", "cause", "event_id", "replayed_from", "user", "thought", "tool_call_id"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    """One span, as the encoder to OTLP needs it; ``error``: status ERROR with this text.
    A slotted dataclass, not a pydantic model: a long session makes tens of thousands, all
    from the mapping here (no outside input), and this is five times cheaper to build."""

    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes | None = None
    name: str
    kind: Literal["internal", "client"]
    start_ns: int
    end_ns: int
    attributes: dict[str, AttributeValue]
    error: str | None = None


class _SessionIds(NamedTuple):
    trace_id: bytes
    session_span: bytes
    conversation: str


@lru_cache(maxsize=64)
def _session_ids(session: UUID) -> _SessionIds:
    """What every span of the session repeats, made once per session (a memo of pure
    functions: the sha256 of its span id and the text of its UUID, per span, were a tenth of
    the mapping's time)."""
    return _SessionIds(trace_id(session), span_id(session, SESSION_SPAN), str(session))


def provider_name(model: str | None) -> str:
    """``gen_ai.provider.name`` of a litellm model name (``openai/gpt-4o``: ``openai``)."""
    if not model or "/" not in model:
        return UNKNOWN_PROVIDER
    prefix = model.split("/", 1)[0]
    return _PROVIDERS.get(prefix, prefix)


def nanoseconds(at: datetime) -> int:
    """A time as OTLP's nanoseconds since the epoch (exact to the log's microseconds)."""
    since = at - datetime(1970, 1, 1, tzinfo=UTC)
    return (since.days * 86_400 + since.seconds) * 1_000_000_000 + since.microseconds * 1_000


def session_spans(
    events: Sequence[RecordedEvent],
    *,
    content: bool = False,
    messages: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Span]:
    """The session's trace (see the module), the session's span first. ``content``: with
    message contents and tool arguments/results; ``messages``: the stored messages by
    content hash, which a call's prompt lists (a message not there is left out)."""
    if not events:
        return []
    calls = [event for event in events if event.kind == "llm.call"]
    prompts = whole_prompts(event.payload for event in calls) if content else None
    spans = [chat_span(call, next(prompts) if prompts else None, messages or {}) for call in calls]
    spans += _tool_spans(events, content)
    return [session_span(events, spans), *spans]


def session_span(events: Sequence[RecordedEvent], children: Iterable[Span] = ()) -> Span:
    """The session's own ``invoke_agent`` span over ``events`` (its log, or the start of it),
    ending at the last of them or of its ``children`` spans, whichever is later."""
    session = events[0].session_id
    config = _config(events)
    model = config.get("model")
    calls = [event for event in events if event.kind == "llm.call"]
    return Span(
        trace_id=trace_id(session),
        span_id=span_id(session, SESSION_SPAN),
        name=f"invoke_agent {config['agent']}" if config.get("agent") else "invoke_agent",
        kind="internal",
        start_ns=nanoseconds(events[0].created_at),
        end_ns=max([nanoseconds(events[-1].created_at), *(span.end_ns for span in children)]),
        attributes=_without_none(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.provider.name": provider_name(model),
                "gen_ai.agent.name": config.get("agent"),
                "gen_ai.conversation.id": str(session),
                "gen_ai.request.model": model,
                **_usage_totals(calls),
            }
        ),
        error=_ended_in_error(events),
    )


def ended_session_spans(events: Sequence[RecordedEvent], *, content: bool = False) -> list[Span]:
    """What the live exporter sends when the session reaches an end state (``events``: its
    log up to that state): the session's span, as ``session_spans`` gives it over the same
    events, and the span of each action no observation answered (ending where it starts),
    which no observation will have sent."""
    if not events:
        return []
    calls = [event for event in events if event.kind == "llm.call"]
    tools = _tool_spans(events, content)
    children = [*(chat_span(call, None, {}) for call in calls), *tools]
    answered = {e.cause for e in events if e.kind in OBSERVATION_KINDS and e.cause is not None}
    unanswered = {span_id(events[0].session_id, seq) for seq in _actions(events) - answered}
    return [session_span(events, children), *(s for s in tools if s.span_id in unanswered)]


def _actions(events: Sequence[RecordedEvent]) -> set[int]:
    return {event.seq for event in events if event.kind in AWAITED_KINDS}


def _config(events: Sequence[RecordedEvent]) -> Mapping[str, Any]:
    for event in events:
        if event.kind == "session.created":
            config = event.payload.get("config")
            return config if isinstance(config, Mapping) else {}
    return {}


def chat_span(
    call: RecordedEvent, prompt: list[str] | None, messages: Mapping[str, Mapping[str, Any]]
) -> Span:
    """The ``chat`` span of one ``llm.call``; ``prompt``: its whole prompt (the hashes of its
    messages, ``app.events.prompts``) when contents are sent, else None."""
    session = call.session_id
    ids = _session_ids(session)
    payload = call.payload
    response = payload.get("response") or {}
    end = nanoseconds(call.created_at)
    latency = payload.get("latency_ms")
    start = end - int(latency * 1_000_000) if _is_number(latency) and latency > 0 else end
    finish = response.get("finish_reason")
    attributes: dict[str, AttributeValue | None] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name(payload.get("model")),
        "gen_ai.conversation.id": ids.conversation,
        "gen_ai.request.model": payload.get("model"),
        "gen_ai.response.id": response.get("id"),
        "gen_ai.response.model": response.get("model"),
        "gen_ai.response.finish_reasons": [str(finish)] if finish else None,
    }
    params = payload.get("params") or {}
    for name, attribute in _PARAMS.items():
        value = params.get(name)
        attributes[attribute] = value if _is_number(value) else None
    usage = payload.get("usage") or {}
    error = payload.get("error")
    for name, attribute in _USAGE.items():
        count = usage.get(name)
        # a failed call's 0 is the log's "none reported", not a count: left out
        attributes[attribute] = count if _is_count(count) and (count or error is None) else None
    if error is not None:
        attributes["error.type"] = str(payload.get("error_kind") or "_OTHER")
    if prompt is not None:
        sent = [_input_message(messages[key]) for key in prompt if key in messages]
        attributes["gen_ai.input.messages"] = _json(sent)
        if response and error is None:
            attributes["gen_ai.output.messages"] = _json([_output_message(response)])
    model = payload.get("model") or ""
    return Span(
        trace_id=ids.trace_id,
        span_id=span_id(session, call.seq),
        parent_span_id=ids.session_span,
        name=f"chat {model}".rstrip(),
        kind="client",
        start_ns=start,
        end_ns=end,
        attributes=_without_none(attributes),
        error=str(error) if error is not None else None,
    )


def _tool_spans(events: Sequence[RecordedEvent], content: bool) -> list[Span]:
    """An ``execute_tool`` span per action a service answers, to its observation."""
    answers = {e.cause: e for e in events if e.kind in OBSERVATION_KINDS and e.cause is not None}
    calls: dict[int, RecordedEvent] = {}
    named: dict[str, str] = {}  # tool call id -> name, of the calls so far (the latest wins)
    spans = []
    for event in events:
        if event.kind == "llm.call":
            calls[event.seq] = event
            named.update(tool_names(event))
        elif event.kind in AWAITED_KINDS:
            cause = calls.get(event.cause) if event.cause is not None else None
            tool = tool_name(event, cause, named)
            spans.append(tool_span(event, answers.get(event.seq), tool, content=content))
    return spans


def tool_names(call: RecordedEvent) -> dict[str, str]:
    """The names of the tool calls an ``llm.call`` answered with, by their ids."""
    names = {}
    for tool_call in (call.payload.get("response") or {}).get("tool_calls") or []:
        # a payload's own dict first: the ABC check costs ten times more
        if type(tool_call) is dict or isinstance(tool_call, Mapping):
            call_id, name = tool_call.get("id"), tool_call.get("name")
            if call_id and name:
                names[str(call_id)] = str(name)
    return names


def tool_name(
    action: RecordedEvent, cause: RecordedEvent | None, earlier: Mapping[str, str]
) -> str:
    """The tool an action ran: the name its tool call has in the call that asked for it (its
    ``cause``), else in the latest call before it (``earlier``: their ``tool_names``), else
    the MCP tool it calls, else its kind. ``earlier`` is read only when the cause does not
    name it, so a live exporter reads the session's earlier calls only then."""
    call_id = action.payload.get("tool_call_id")
    tool = None
    if call_id:
        if cause is not None and cause.kind == "llm.call":
            tool = tool_names(cause).get(str(call_id))
        tool = tool or earlier.get(str(call_id))
    return str(tool or (action.payload.get("tool") if action.kind == "mcp.call" else None)
               or action.kind)  # fmt: skip


def tool_span(
    action: RecordedEvent, answer: RecordedEvent | None, tool: str, *, content: bool
) -> Span:
    """The ``execute_tool`` span of an action (``tool``: ``tool_name``), from the action to
    its ``answer`` (None: unanswered, the span ends where it starts)."""
    session = action.session_id
    ids = _session_ids(session)
    payload = action.payload
    call_id = payload.get("tool_call_id")
    failure = _failure(answer)
    attributes: dict[str, AttributeValue | None] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": str(call_id) if call_id else None,
        "gen_ai.tool.type": "extension" if action.kind == "mcp.call" else "function",
        "gen_ai.conversation.id": ids.conversation,
        "error.type": failure[0] if failure else None,
    }
    if content:
        attributes["gen_ai.tool.call.arguments"] = _json(_fields(payload))
        if answer is not None:
            attributes["gen_ai.tool.call.result"] = _json(_fields(answer.payload))
    start = nanoseconds(action.created_at)
    end = nanoseconds(answer.created_at) if answer is not None else start
    return Span(
        trace_id=ids.trace_id,
        span_id=span_id(session, action.seq),
        parent_span_id=ids.session_span,
        name=f"execute_tool {tool}",
        kind="internal",
        start_ns=start,
        end_ns=max(start, end),
        attributes=_without_none(attributes),
        error=failure[1] if failure else None,
    )


def _failure(answer: RecordedEvent | None) -> tuple[str, str] | None:
    """``error.type`` and the status message of a tool's answer that says it failed."""
    return None if answer is None else answer_failure(answer.kind, answer.payload)


def _ended_in_error(events: Sequence[RecordedEvent]) -> str | None:
    """The reason of the session's last ``agent.state``, when that is ``error``."""
    for event in reversed(events):
        if event.kind == "agent.state":
            if event.payload.get("state") == "error":
                return str(event.payload.get("reason") or "error")
            return None
    return None


#: The counts the session's span sums (reasoning is not among invoke_agent's attributes).
_TOTALLED = ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_creation_tokens")


def _usage_totals(calls: Iterable[RecordedEvent]) -> dict[str, int]:
    """The session's token counts (the conventions put them on ``invoke_agent`` too): the
    sum over calls that sent them; a count no call sent is left out."""
    totals: dict[str, int] = {}
    for call in calls:
        usage = call.payload.get("usage") or {}
        for name in _TOTALLED:
            count = usage.get(name)
            if _is_count(count):
                totals[_USAGE[name]] = totals.get(_USAGE[name], 0) + count
    return totals


def _input_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message (OpenAI's shape, as stored) in the conventions' ``{role, parts}``."""
    parts: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        parts.append({"type": "text", "content": text})
    elif isinstance(text, list):
        for part in text:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append({"type": "text", "content": part.get("text", "")})
    for tool_call in message.get("tool_calls") or []:
        if isinstance(tool_call, Mapping):
            parts.append(_tool_call_part(tool_call.get("id"), tool_call.get("function") or {}))
    role = str(message.get("role") or "user")
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": message.get("tool_call_id"),
                  "response": text if isinstance(text, str) else parts}]  # fmt: skip
    shaped: dict[str, Any] = {"role": role, "parts": parts}
    if message.get("name"):
        shaped["name"] = message["name"]
    return shaped


def _output_message(response: Mapping[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if response.get("content"):
        parts.append({"type": "text", "content": response["content"]})
    for tool_call in response.get("tool_calls") or []:
        if isinstance(tool_call, Mapping):
            parts.append(_tool_call_part(tool_call.get("id"), tool_call))
    return {
        "role": "assistant",
        "parts": parts,
        "finish_reason": str(response.get("finish_reason") or "stop"),
    }


def _tool_call_part(call_id: Any, function: Mapping[str, Any]) -> dict[str, Any]:
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            pass  # as the model sent it: a string
    return {
        "type": "tool_call",
        "id": call_id,
        "name": function.get("name"),
        "arguments": arguments,
    }


def _fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key not in _ENVELOPE}


def _json(value: Any) -> str:
    """JSON text of a content attribute. A lone surrogate the log keeps (which orjson
    refuses) is written as its ``\\udXXX`` escape: valid UTF-8, and nothing lost."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, separators=(",", ":"))


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _without_none(attributes: Mapping[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    return {key: value for key, value in attributes.items() if value is not None}
