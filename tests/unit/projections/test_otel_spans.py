"""A session as an OpenTelemetry trace (app/projections/otlp): the GenAI conventions' spans
and attributes, ids derived from the log, contents only when asked for (pure, no I/O)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from app.events import (
    AgentState,
    ErrorObservation,
    Event,
    LlmCall,
    Message,
    Run,
    RunOutput,
    SessionCreated,
)
from app.events.llm import LlmResponse, LlmUsage, ToolCall
from app.projections.config import OtlpExportConfig
from app.projections.otlp.ids import span_id, trace_id
from app.projections.otlp.live import ends_a_run
from app.projections.otlp.spans import (
    Span,
    chat_span,
    ended_session_spans,
    nanoseconds,
    provider_name,
    session_spans,
    tool_name,
    tool_names,
    tool_span,
)
from app.store import RecordedEvent
from tests.support.event_log import as_recorded

SESSION = uuid.UUID("6f1c2a4e-9b1d-4c3e-8f00-123456789abc")
START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def log(*events: Event) -> list[RecordedEvent]:
    """The events as recorded one second apart from START, seq from 1."""
    return [
        as_recorded(event, SESSION, seq)._replace(created_at=START + timedelta(seconds=seq))
        for seq, event in enumerate(events, start=1)
    ]


def session() -> list[RecordedEvent]:
    call = LlmCall(
        model="anthropic/claude-sonnet-4",
        fingerprint="f",
        prompt=["h-system", "h-user"],
        params={"temperature": 0.2, "max_tokens": 512},
        response=LlmResponse(
            content="Listing.",
            tool_calls=[ToolCall(id="call_1", name="execute_bash", arguments='{"command": "ls"}')],
            finish_reason="tool_calls",
            id="msg_01",
            model="claude-sonnet-4-20250514",
        ),
        usage=LlmUsage(
            prompt_tokens=1200,
            completion_tokens=40,
            cached_tokens=1000,
            cache_creation_tokens=100,
            reasoning_tokens=None,
        ),
        latency_ms=1500.0,
    )
    return log(
        SessionCreated(
            title="t", config={"agent": "codeact", "model": "anthropic/claude-sonnet-4"}
        ),
        Message(content="List the files.", source="user"),
        call,
        Run(command="ls", tool_call_id="call_1", cause=3),
        RunOutput(output="a.txt\n", exit_code=0, cause=4),
        Run(command="false", tool_call_id="call_2", cause=3),
        RunOutput(output="", exit_code=1, cause=6),
        Run(command="cat nothing", cause=3),
        ErrorObservation(message="no such file", error_type="FileNotFoundError", cause=8),
        LlmCall(
            model="anthropic/claude-sonnet-4",
            fingerprint="g",
            error="overloaded",
            error_kind="rate_limited",
            latency_ms=None,
        ),
        AgentState(state="error", reason="the model is overloaded"),
    )


def by_seq(spans: list[Span]) -> dict[bytes, Span]:
    return {span.span_id: span for span in spans}


def test_one_trace_an_invoke_agent_span_and_a_span_per_call_and_tool() -> None:
    spans = session_spans(session())
    root, *children = spans
    assert root.name == "invoke_agent codeact" and root.kind == "internal"
    assert root.parent_span_id is None and root.span_id == span_id(SESSION, 0)
    assert {span.trace_id for span in spans} == {SESSION.bytes} == {trace_id(SESSION)}
    assert all(child.parent_span_id == root.span_id for child in children)
    assert [span.name for span in children] == [
        "chat anthropic/claude-sonnet-4", "chat anthropic/claude-sonnet-4",
        "execute_tool execute_bash", "execute_tool run", "execute_tool run",
    ]  # fmt: skip
    assert root.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.agent.name": "codeact",
        "gen_ai.conversation.id": str(SESSION),
        "gen_ai.request.model": "anthropic/claude-sonnet-4",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 40,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "gen_ai.usage.cache_creation.input_tokens": 100,
    }
    assert root.error == "the model is overloaded"
    assert root.start_ns == nanoseconds(START + timedelta(seconds=1))
    assert root.end_ns == nanoseconds(START + timedelta(seconds=11))


def test_a_model_call_span_ends_at_its_event_and_says_what_the_conventions_name() -> None:
    spans = by_seq(session_spans(session()))
    chat = spans[span_id(SESSION, 3)]
    assert chat.kind == "client" and chat.error is None
    assert chat.end_ns == nanoseconds(START + timedelta(seconds=3))
    assert chat.end_ns - chat.start_ns == 1_500_000_000
    assert chat.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.conversation.id": str(SESSION),
        "gen_ai.request.model": "anthropic/claude-sonnet-4",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 512,
        "gen_ai.response.id": "msg_01",
        "gen_ai.response.model": "claude-sonnet-4-20250514",
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 40,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "gen_ai.usage.cache_creation.input_tokens": 100,
    }
    failed = spans[span_id(SESSION, 10)]
    assert failed.error == "overloaded" and failed.attributes["error.type"] == "rate_limited"
    assert failed.start_ns == failed.end_ns  # no latency recorded
    # its usage was none reported (the log's zeros): no token counts, rather than 0 tokens
    assert not [name for name in failed.attributes if name.startswith("gen_ai.usage.")]


def test_a_tool_span_runs_from_the_action_to_its_observation_and_says_how_it_failed() -> None:
    spans = by_seq(session_spans(session()))
    listed = spans[span_id(SESSION, 4)]
    assert listed.attributes["gen_ai.tool.name"] == "execute_bash"  # as the model called it
    assert listed.attributes["gen_ai.tool.call.id"] == "call_1"
    assert listed.end_ns - listed.start_ns == 1_000_000_000 and listed.error is None
    assert "error.type" not in listed.attributes
    exited = spans[span_id(SESSION, 6)]
    assert (exited.attributes["error.type"], exited.error) == ("exit_code", "exited 1")
    missing = spans[span_id(SESSION, 8)]
    assert missing.attributes["error.type"] == "FileNotFoundError"
    assert missing.error == "no such file" and "gen_ai.tool.call.id" not in missing.attributes


CONTENT = ("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg", "gen_ai.tool.call.result")


def test_contents_only_when_asked_in_the_conventions_shape() -> None:
    quiet = session_spans(session())
    assert not any(
        key.startswith(
            ("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.a", "gen_ai.tool.call.r")
        )
        for span in quiet
        for key in span.attributes
    )
    messages = {
        "h-system": {"role": "system", "content": "You are a coding agent."},
        "h-user": {"role": "user", "content": "List the files."},
    }
    spans = by_seq(session_spans(session(), content=True, messages=messages))
    chat = spans[span_id(SESSION, 3)].attributes
    assert json.loads(str(chat["gen_ai.input.messages"])) == [
        {"role": "system", "parts": [{"type": "text", "content": "You are a coding agent."}]},
        {"role": "user", "parts": [{"type": "text", "content": "List the files."}]},
    ]
    assert json.loads(str(chat["gen_ai.output.messages"])) == [{
        "role": "assistant",
        "parts": [
            {"type": "text", "content": "Listing."},
            {"type": "tool_call", "id": "call_1", "name": "execute_bash",
             "arguments": {"command": "ls"}},
        ],
        "finish_reason": "tool_calls",
    }]  # fmt: skip
    tool = spans[span_id(SESSION, 4)].attributes
    assert json.loads(str(tool["gen_ai.tool.call.arguments"])) == {
        "command": "ls", "timeout": None, "is_input": False,
    }  # fmt: skip
    result = json.loads(str(tool["gen_ai.tool.call.result"]))
    assert result["output"] == "a.txt\n" and result["exit_code"] == 0


def test_the_ids_are_the_logs_so_a_second_export_is_the_same_trace() -> None:
    assert session_spans(session()) == session_spans(session())
    ids = [span.span_id for span in session_spans(session())]
    assert len(set(ids)) == len(ids) and all(len(i) == 8 and any(i) for i in ids)
    other = uuid.uuid4()
    assert span_id(other, 3) != span_id(SESSION, 3)
    assert trace_id(uuid.UUID(int=0)) != bytes(16) and len(trace_id(uuid.UUID(int=0))) == 16


def test_the_provider_is_named_as_the_conventions_name_it() -> None:
    assert provider_name("openai/gpt-4o") == "openai"
    assert provider_name("bedrock/anthropic.claude-v2") == "aws.bedrock"
    assert provider_name("vertex_ai/gemini-pro") == "gcp.vertex_ai"
    assert provider_name("gpt-4o") == "_OTHER" and provider_name(None) == "_OTHER"


def test_odd_recorded_values_are_left_out_not_exported_wrong() -> None:
    odd = log(
        SessionCreated(title="t", config={}),
        LlmCall(
            model="openai/m",
            fingerprint="f",
            latency_ms=-5.0,
            usage=LlmUsage(prompt_tokens=None, completion_tokens=None),
        ),
    )
    root, chat = session_spans(odd)
    assert root.name == "invoke_agent" and root.attributes["gen_ai.provider.name"] == "_OTHER"
    assert "gen_ai.usage.input_tokens" not in chat.attributes
    assert chat.start_ns == chat.end_ns
    assert session_spans([]) == []


def test_each_span_made_alone_is_the_batch_exports() -> None:
    events = session()
    batch = {span.span_id: span for span in session_spans(events, content=True, messages={})}
    by_seq = {event.seq: event for event in events}
    for call in (e for e in events if e.kind == "llm.call"):
        prompt = list(call.payload.get("prompt") or [])
        assert chat_span(call, prompt, {}) == batch[chat_span(call, None, {}).span_id]
    for answer in (e for e in events if e.kind in ("run.output", "error") and e.cause):
        action = by_seq[answer.cause or 0]
        cause = by_seq.get(action.cause or 0)
        alone = tool_span(action, answer, tool_name(action, cause, {}), content=True)
        assert alone == batch[alone.span_id]


def test_at_the_end_the_sessions_span_and_the_unanswered_actions() -> None:
    events = log(*(e.event() for e in session()[:-2]), Run(command="sleep 9", cause=3),
                 AgentState(state="stopped", reason="asked"))  # fmt: skip
    batch = session_spans(events)
    sent = ended_session_spans(events)
    assert sent[0] == batch[0]
    unanswered = [s for s in batch if s.name.startswith("execute_tool") and s.end_ns == s.start_ns]
    assert {s.span_id for s in sent[1:]} <= {s.span_id for s in unanswered}
    assert any(s.attributes["gen_ai.tool.name"] == "run" for s in sent[1:])
    assert ends_a_run(events[-1]) and not ends_a_run(events[0])
    assert not ends_a_run(log(AgentState(state="running"))[0])


def test_a_tool_is_named_by_the_call_that_asked_for_it_then_by_earlier_calls() -> None:
    asked = LlmCall(model="m", fingerprint="f", response=LlmResponse(
        tool_calls=[ToolCall(id="c1", name="shell", arguments="{}")]))  # fmt: skip
    again = LlmCall(model="m", fingerprint="f", response=LlmResponse(
        tool_calls=[ToolCall(id="c1", name="editor", arguments="{}")]))  # fmt: skip
    call, other, action, answer = log(
        asked, again, Run(command="ls", tool_call_id="c1", cause=1), RunOutput(cause=3)
    )
    assert tool_name(action, call, {}) == "shell"
    assert tool_name(action, None, tool_names(other)) == "editor"
    assert tool_name(action, None, {}) == "run"
    batch = session_spans([call, other, action, answer])
    assert batch[-1].attributes["gen_ai.tool.name"] == "shell"


def test_the_settings_read_headers_as_the_environment_writes_them() -> None:
    config = OtlpExportConfig.model_validate(
        {"url": "http://collector:4318", "headers": "x-api-key=k%3D1, team = a"}
    )
    assert config.header_values() == {"x-api-key": "k=1", "team": "a"}
    assert "k=1" not in repr(config)
    assert OtlpExportConfig(url="").url is None
    with pytest.raises(ValidationError):
        OtlpExportConfig(url="collector:4318")
    with pytest.raises(ValidationError):
        OtlpExportConfig.model_validate({"headers": "novalue"})
