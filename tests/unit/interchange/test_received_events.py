"""Received GenAI spans as the log's events: a model call an ``llm.call`` with its prompt in
OpenAI's chat shape, a tool execution an ``imported`` action and its output caused by the
call that asked for it, anything else an ``otel.span``; the root ``invoke_agent`` ends the
run. The spans' shapes are those the official openai-v2 instrumentation sends."""

from __future__ import annotations

import json
import uuid

from app.events import ImportedAction, ImportedOutput, LlmCall, OtelSpan, canonical_json
from app.events.conversation import AgentState
from app.interchange.otel.received import ReceivedSpan, SpanEvent
from app.interchange.otel.received_events import chat_messages, event_id, operation, span_events
from app.llm.fingerprint import content_hash, fingerprint, stable_hash

SESSION = uuid.UUID("5e55e55e-0000-4000-8000-000000000001")
TRACE = "0af7651916cd43dd8448eb211c80319c"
ROOT = "b7ad6b7169203331"
SECOND = 1_000_000_000
START = 1_700_000_000 * SECOND

INPUT = [
    {"role": "system", "parts": [{"type": "text", "content": "You are terse."}]},
    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
]
OUTPUT = [
    {
        "role": "assistant",
        "parts": [
            {
                "type": "tool_call",
                "id": "call_abc123",
                "name": "get_weather",
                "arguments": {"location": "Paris"},
            }
        ],
        "finish_reason": "tool_calls",
    }
]


def span(span_id: str, name: str, start: float, end: float, **attributes: object) -> ReceivedSpan:
    return ReceivedSpan(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=None if span_id == ROOT else ROOT,
        name=name,
        start_ns=START + int(start * SECOND),
        end_ns=START + int(end * SECOND),
        attributes=dict(attributes),
        service="weather-agent",
    )


def chat() -> ReceivedSpan:
    return span(
        "00000000000000c1",
        "chat gpt-4o",
        1.0,
        2.5,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.request.temperature": 0.2,
            "gen_ai.request.max_tokens": 100,
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.response.id": "chatcmpl-fake123",
            "gen_ai.response.finish_reasons": ["tool_calls"],
            "gen_ai.usage.input_tokens": 42,
            "gen_ai.usage.output_tokens": 7,
            "gen_ai.usage.cache_read.input_tokens": 32,
            "gen_ai.conversation.id": "conv-1",
            "gen_ai.input.messages": json.dumps(INPUT),
            "gen_ai.output.messages": json.dumps(OUTPUT),
        },
    )


def tool() -> ReceivedSpan:
    return span(
        "00000000000000d1",
        "execute_tool get_weather",
        2.6,
        2.9,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_abc123",
            "gen_ai.tool.call.arguments": '{"location": "Paris"}',
            "gen_ai.tool.call.result": "rainy, 57F",
        },
    )


def root(failed: bool = False) -> ReceivedSpan:
    made = span(
        ROOT,
        "invoke_agent weather",
        0.0,
        3.0,
        **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
    )
    if failed:
        made = made.model_copy(
            update={
                "status_code": 2,
                "events": [
                    SpanEvent(
                        name="exception",
                        attributes={"exception.type": "ValueError", "exception.message": "bad"},
                    )
                ],
            }
        )
    return made


def test_a_model_call_span_is_an_llm_call_with_its_prompt_as_a_live_call_stores_it() -> None:
    settled = span_events(SESSION, 2, [chat()], root_ids={ROOT})
    ((_, call),) = settled.events
    assert isinstance(call, LlmCall)
    assert call.model == "gpt-4o"
    assert call.params == {"temperature": 0.2, "max_tokens": 100}
    prompt = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert call.prompt == [content_hash(message) for message in prompt]
    assert settled.messages == {content_hash(m): canonical_json(m) for m in prompt}
    no_tools = content_hash({"tools": []})
    assert call.fingerprint == fingerprint(
        "gpt-4o", [stable_hash(m) for m in prompt], no_tools, call.params
    )
    assert call.response.tool_calls[0].model_dump() == {
        "id": "call_abc123",
        "name": "get_weather",
        "arguments": canonical_json({"location": "Paris"}),
    }
    assert call.response.finish_reason == "tool_calls"
    assert (call.response.id, call.response.model) == ("chatcmpl-fake123", "gpt-4o-2024-08-06")
    assert (call.usage.prompt_tokens, call.usage.completion_tokens) == (42, 7)
    assert (call.usage.cached_tokens, call.usage.total_tokens) == (32, 49)
    assert call.latency_ms == 1500.0
    assert call.error is None
    assert call.imported is not None and call.imported.format == "otlp"
    assert call.imported.id == f"{TRACE}/00000000000000c1"
    assert call.event_id == event_id(SESSION, chat(), "call")


def test_a_tool_span_is_an_action_caused_by_its_call_and_its_output() -> None:
    settled = span_events(SESSION, 2, [chat(), tool(), root()], root_ids={ROOT})
    kinds = [event.kind for _, event in settled.events]
    assert kinds == ["llm.call", "imported", "imported.output", "otel.span", "agent.state"]
    action, output = settled.events[1][1], settled.events[2][1]
    assert isinstance(action, ImportedAction) and isinstance(output, ImportedOutput)
    assert (action.tool, action.arguments, action.tool_call_id) == (
        "get_weather",
        {"location": "Paris"},
        "call_abc123",
    )
    assert action.cause == 2  # the llm.call at seq 2
    assert output.cause == 3 and output.content == "rainy, 57F"
    kept = settled.events[3][1]
    assert isinstance(kept, OtelSpan) and kept.name == "invoke_agent weather"
    end = settled.events[4][1]
    assert isinstance(end, AgentState) and end.state == "finished"
    assert len({event.event_id for _, event in settled.events}) == 5


def test_a_failed_root_span_ends_the_run_in_error_and_a_failed_tool_says_so() -> None:
    failed_tool = tool().model_copy(
        update={"status_code": 2, "attributes": {**tool().attributes, "error.type": "Timeout"}}
    )
    settled = span_events(SESSION, 1, [failed_tool, root(failed=True)], root_ids={ROOT})
    output = settled.events[1][1]
    assert isinstance(output, ImportedOutput)
    assert output.observation == "error" and output.extras["error_type"] == "Timeout"
    assert settled.events[0][1].cause is None  # its call is not in this batch
    end = settled.events[-1][1]
    assert isinstance(end, AgentState) and end.state == "error"
    assert end.reason == "ValueError: bad"


def test_a_span_that_is_no_genai_operation_is_kept_as_it_came() -> None:
    http = span("00000000000000e1", "GET /search", 0.1, 0.2, **{"http.response.status_code": 200})
    settled = span_events(SESSION, 1, [http], root_ids={ROOT})
    ((_, kept),) = settled.events
    assert isinstance(kept, OtelSpan)
    assert kept.attributes == {"http.response.status_code": 200}
    assert kept.parent_span_id == ROOT and kept.service == "weather-agent"


def test_older_instrumentations_model_calls_are_recognised_by_name() -> None:
    legacy = span("00000000000000f1", "chat gpt-4o", 0, 1, **{"gen_ai.system": "openai"})
    assert operation(legacy) == "chat"
    assert operation(span("00000000000000f2", "chat", 0, 1)) == ""


def test_genai_messages_become_openai_chat_messages() -> None:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "w", "arguments": {"x": 1}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "rain"}]},
        {"role": "user", "parts": [{"type": "uri", "modality": "image", "uri": "https://x/y.png"}]},
    ]
    assert chat_messages(messages, [{"type": "text", "content": "Be brief."}]) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"x":1}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
        {
            "role": "user",
            "content": [{"type": "uri", "modality": "image", "uri": "https://x/y.png"}],
        },
    ]
    assert chat_messages("not a list") == []


def test_openllmetrys_indexed_messages_become_the_calls_prompt_and_reply() -> None:
    """OpenLLMetry (Traceloop) writes each message's fields as attributes of their own."""
    traceloop = span(
        "00000000000000a1",
        "openai.chat",
        0,
        1,
        **{
            "gen_ai.system": "openai",
            "llm.request.type": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "You are terse.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Weather in Paris?",
            "gen_ai.prompt.2.role": "assistant",
            "gen_ai.prompt.2.tool_calls.0.id": "c0",
            "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
            "gen_ai.prompt.2.tool_calls.0.arguments": '{"location": "Lyon"}',
            "gen_ai.prompt.3.role": "tool",
            "gen_ai.prompt.3.tool_call_id": "c0",
            "gen_ai.prompt.3.content": "rain",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.1.id": "c2",
            "gen_ai.completion.0.tool_calls.1.name": "get_time",
            "gen_ai.completion.0.tool_calls.1.arguments": "{}",
            "gen_ai.completion.0.tool_calls.0.id": "c1",
            "gen_ai.completion.0.tool_calls.0.name": "get_weather",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"location": "Paris"}',
            "gen_ai.usage.prompt_tokens": 30,
            "gen_ai.usage.completion_tokens": 9,
        },
    )
    assert operation(traceloop) == "chat"
    settled = span_events(SESSION, 2, [traceloop], root_ids=set())
    ((_, call),) = settled.events
    assert isinstance(call, LlmCall)
    prompt = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"location": "Lyon"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "rain"},
    ]
    assert call.prompt == [content_hash(message) for message in prompt]
    assert [(c.id, c.name, c.arguments) for c in call.response.tool_calls] == [
        ("c1", "get_weather", '{"location": "Paris"}'),
        ("c2", "get_time", "{}"),
    ]
    assert call.response.finish_reason == "tool_calls"
    assert (call.usage.prompt_tokens, call.usage.completion_tokens) == (30, 9)
    # the conventions' attributes win where a span carries both
    both = span("00000000000000a2", "chat gpt-4o", 0, 1, **{
        **traceloop.attributes, "gen_ai.input.messages": json.dumps(INPUT),
    })  # fmt: skip
    ((_, current),) = span_events(SESSION, 2, [both], root_ids=set()).events
    assert isinstance(current, LlmCall) and len(current.prompt) == 2
