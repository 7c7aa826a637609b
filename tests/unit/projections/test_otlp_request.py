"""Spans as OTLP's protobuf request (app/projections/otlp/encoding.py): what OTLP/HTTP sends,
read back with OpenTelemetry's own generated classes."""

from __future__ import annotations

import json
import uuid

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from app.events import LlmCall, McpCall, McpResult, SessionCreated
from app.events.llm import LlmResponse
from app.projections.otlp.encoding import SCOPE, export_request
from app.projections.otlp.spans import SCHEMA_URL, Span, session_spans
from tests.support.event_log import as_recorded


def value(any_value: object) -> object:
    """An AnyValue as Python (the one field it holds)."""
    kind = any_value.WhichOneof("value")  # type: ignore[attr-defined]
    held = getattr(any_value, kind)
    return [item.string_value for item in held.values] if kind == "array_value" else held


def test_the_request_round_trips_through_protobuf() -> None:
    spans = [
        Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="invoke_agent codeact",
             kind="internal", start_ns=1, end_ns=5,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 7}),
        Span(trace_id=b"\x01" * 16, span_id=b"\x03" * 8, parent_span_id=b"\x02" * 8,
             name="chat openai/m", kind="client", start_ns=2, end_ns=3,
             attributes={"gen_ai.request.temperature": 0.5, "gen_ai.request.stream": False,
                         "gen_ai.response.finish_reasons": ["stop", "length"]},
             error="overloaded"),
    ]  # fmt: skip
    body = export_request(spans).SerializeToString()
    read = ExportTraceServiceRequest.FromString(body)
    [resource] = read.resource_spans
    assert {kv.key: value(kv.value) for kv in resource.resource.attributes} == {
        "service.name": "chronicle"
    }
    [scope] = resource.scope_spans
    assert scope.scope.name == SCOPE and scope.schema_url == SCHEMA_URL
    root, chat = scope.spans
    assert (root.trace_id, root.span_id, root.parent_span_id) == (b"\x01" * 16, b"\x02" * 8, b"")
    assert root.kind == OtlpSpan.SPAN_KIND_INTERNAL and root.status.code == Status.STATUS_CODE_UNSET
    assert (root.start_time_unix_nano, root.end_time_unix_nano) == (1, 5)
    assert {kv.key: value(kv.value) for kv in root.attributes} == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 7,
    }  # fmt: skip
    assert chat.kind == OtlpSpan.SPAN_KIND_CLIENT and chat.parent_span_id == b"\x02" * 8
    assert (chat.status.code, chat.status.message) == (Status.STATUS_CODE_ERROR, "overloaded")
    attributes = {kv.key: kv.value for kv in chat.attributes}
    assert attributes["gen_ai.request.stream"].WhichOneof("value") == "bool_value"
    assert value(attributes["gen_ai.request.temperature"]) == 0.5
    assert value(attributes["gen_ai.response.finish_reasons"]) == ["stop", "length"]


def test_a_resource_of_the_callers() -> None:
    request = export_request([], resource={"service.name": "ci-agents", "deployment": "eu"})
    [resource] = request.resource_spans
    assert [kv.key for kv in resource.resource.attributes] == ["service.name", "deployment"]
    assert list(resource.scope_spans[0].spans) == []


def test_what_the_log_keeps_and_utf8_cannot_carry_still_goes() -> None:
    """A lone surrogate (a file name that was not UTF-8, a model's odd output), a NUL and a
    number past 64 bits, all of which the log keeps, in names, attributes and contents."""
    session = uuid.uuid4()
    events = [
        as_recorded(event, session, seq)
        for seq, event in enumerate(
            [
                SessionCreated(title="t", config={"agent": "a\ud800", "model": "openai/m\x00"}),
                LlmCall(
                    model="openai/m\udfff",
                    fingerprint="f",
                    response=LlmResponse(content="odd \ud800 \x00", finish_reason="st\udc80op"),
                    error="failed \udcff",
                ),
                McpCall(server="s", tool="t\ud800", arguments={"n": 10**30, "p": "\udce9.txt"}),
                McpResult(content=[{"type": "text", "text": "\udc80"}], cause=3),
            ],
            start=1,
        )
    ]
    for content in (False, True):
        spans = session_spans(events, content=content, messages={})
        read = ExportTraceServiceRequest.FromString(export_request(spans).SerializeToString())
        root, chat, tool = read.resource_spans[0].scope_spans[0].spans
        assert root.name == "invoke_agent a\ufffd" and chat.status.message == "failed \ufffd"
        assert tool.name == "execute_tool t\ufffd"
        attributes = {kv.key: value(kv.value) for kv in chat.attributes}
        assert attributes["gen_ai.response.finish_reasons"] == ["st\ufffdop"]
        if content:
            arguments = {kv.key: value(kv.value) for kv in tool.attributes}
            # contents are JSON text: the surrogate as its escape, the big number whole
            assert json.loads(str(arguments["gen_ai.tool.call.arguments"]))["arguments"] == {
                "n": 10**30, "p": "\udce9.txt",
            }  # fmt: skip
