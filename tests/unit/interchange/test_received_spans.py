"""OTLP trace exports as ``POST /v1/traces`` receives them: protobuf and OTLP JSON decode to the
same spans; malformed, oversized and hostile bodies are refused with a reason."""

from __future__ import annotations

import base64
import json

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from app.interchange.otel.received import BadTraces, TooManySpans, decode

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
ROOT = bytes.fromhex("b7ad6b7169203331")
CHILD = bytes.fromhex("00f067aa0ba902b7")


def protobuf_request(spans: list[Span], service: str = "my-agent") -> bytes:
    resource = Resource(
        attributes=[KeyValue(key="service.name", value=AnyValue(string_value=service))]
    )
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=resource,
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    )
    request.resource_spans[0].scope_spans[0].scope.name = "opentelemetry.util.genai.handler"
    return request.SerializeToString()


def chat_span() -> Span:
    attributes = [
        KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="chat")),
        KeyValue(key="gen_ai.usage.input_tokens", value=AnyValue(int_value=42)),
        KeyValue(key="gen_ai.request.temperature", value=AnyValue(double_value=0.2)),
        KeyValue(key="gen_ai.request.stream", value=AnyValue(bool_value=False)),
        KeyValue(
            key="gen_ai.response.finish_reasons",
            value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="stop")])),
        ),
        KeyValue(
            key="nested",
            value=AnyValue(
                kvlist_value=KeyValueList(
                    values=[KeyValue(key="a", value=AnyValue(bytes_value=b"\x01\x02"))]
                )
            ),
        ),
    ]
    span = Span(
        trace_id=TRACE,
        span_id=CHILD,
        parent_span_id=ROOT,
        name="chat gpt-4o",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_500_000_000,
        attributes=attributes,
        status=Status(code=Status.STATUS_CODE_ERROR, message="boom"),
    )
    event = span.events.add()
    event.name = "exception"
    event.time_unix_nano = 1_700_000_001_000_000_000
    event.attributes.add(key="exception.type", value=AnyValue(string_value="RateLimitError"))
    return span


def as_otlp_json(body: bytes) -> bytes:
    """The same request in the OTLP JSON mapping, as the official JSON exporter writes it."""
    request = ExportTraceServiceRequest.FromString(body)
    from google.protobuf import json_format

    document = json_format.MessageToDict(request, use_integers_for_enums=True)

    def hex_ids(value: object) -> object:
        if isinstance(value, dict):
            return {
                key: (
                    base64.b64decode(item).hex()
                    if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str)
                    else hex_ids(item)
                )
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [hex_ids(item) for item in value]
        return value

    return json.dumps(hex_ids(document)).encode()


def test_protobuf_and_json_decode_to_the_same_spans() -> None:
    body = protobuf_request([chat_span()])
    from_protobuf = decode(body, "application/x-protobuf")
    from_json = decode(as_otlp_json(body), "application/json; charset=utf-8")
    assert from_protobuf == from_json
    (span,) = from_protobuf
    assert span.trace_id == TRACE.hex()
    assert span.span_id == CHILD.hex()
    assert span.parent_span_id == ROOT.hex()
    assert span.kind == 3
    assert span.end_ns - span.start_ns == 1_500_000_000
    assert span.attributes["gen_ai.usage.input_tokens"] == 42
    assert span.attributes["gen_ai.request.temperature"] == 0.2
    assert span.attributes["gen_ai.request.stream"] is False
    assert span.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert span.attributes["nested"] == {"a": "0102"}
    assert span.failed and span.status_message == "boom"
    assert span.events[0].attributes == {"exception.type": "RateLimitError"}
    assert span.service == "my-agent"
    assert span.scope == "opentelemetry.util.genai.handler"


def test_json_takes_int64_as_numbers_or_strings_and_ignores_unknown_fields() -> None:
    body = {
        "resourceSpans": [
            {
                "somethingNew": 1,
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": TRACE.hex().upper(),
                                "spanId": ROOT.hex(),
                                "parentSpanId": "",
                                "name": "invoke_agent",
                                "kind": 1,
                                "startTimeUnixNano": 5,
                                "endTimeUnixNano": "7",
                                "attributes": [
                                    {"key": "n", "value": {"intValue": "9007199254740993"}},
                                    {"key": "empty", "value": {}},
                                ],
                                "flags": 256,
                            }
                        ]
                    }
                ],
            }
        ]
    }
    (span,) = decode(json.dumps(body).encode(), "application/json")
    assert span.trace_id == TRACE.hex()
    assert span.parent_span_id is None
    assert (span.start_ns, span.end_ns) == (5, 7)
    assert span.attributes == {"n": 9007199254740993, "empty": None}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{", "not JSON"),
        (b'"\\ud800"', "not JSON"),  # a lone surrogate
        (b"[]", "must be a JSON object"),
        (b'{"resourceSpans": {}}', "must be a JSON array"),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"00f067aa0ba902b7"}]}]}]}',
            "traceId must be 32 hex digits",
        ),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00000000000000000000000000000000","spanId":"00f067aa0ba902b7"}]}]}]}',
            "must not be all zero",
        ),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b7","startTimeUnixNano":"1e99"}]}]}]}',
            "64-bit integer",
        ),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b7","startTimeUnixNano":"99999999999999999999999"}]}]}]}',
            "64-bit integer",
        ),
    ],
)
def test_malformed_json_is_refused_with_a_reason(body: bytes, reason: str) -> None:
    with pytest.raises(BadTraces, match=reason):
        decode(body, "application/json")


def test_malformed_protobuf_and_unknown_types_are_refused() -> None:
    with pytest.raises(BadTraces, match="protobuf"):
        decode(b"\xff\xff\xff", "application/x-protobuf")
    with pytest.raises(BadTraces, match="unsupported content type"):
        decode(b"", "text/plain")
    short = Span(trace_id=b"\x01", span_id=CHILD, name="x")
    with pytest.raises(BadTraces, match="traceId must be 16 bytes"):
        decode(protobuf_request([short]), "application/x-protobuf")


def test_deep_nesting_is_refused() -> None:
    value: dict[str, object] = {"stringValue": "x"}
    for _ in range(40):
        value = {"arrayValue": {"values": [value]}}
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": TRACE.hex(),
                                "spanId": ROOT.hex(),
                                "attributes": [{"key": "deep", "value": value}],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    with pytest.raises(BadTraces, match="nests deeper"):
        decode(json.dumps(body).encode(), "application/json")


def test_a_request_of_too_many_spans_is_refused_before_they_are_built() -> None:
    spans = [Span(trace_id=TRACE, span_id=(i + 1).to_bytes(8, "big"), name="s") for i in range(11)]
    body = protobuf_request(spans)
    with pytest.raises(TooManySpans, match="11 spans; at most 10"):
        decode(body, "application/x-protobuf", max_spans=10)
    with pytest.raises(TooManySpans):
        decode(as_otlp_json(body), "application/json", max_spans=10)
    assert len(decode(body, "application/x-protobuf", max_spans=11)) == 11
