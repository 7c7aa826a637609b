"""Spans as an OTLP ``ExportTraceServiceRequest`` (the protobuf OTLP/HTTP sends to
``/v1/traces``), with OpenTelemetry's own generated messages (``opentelemetry-proto``).

One resource (``service.name`` = ``chronicle`` unless given) and one instrumentation scope
(``chronicle``, the conventions' schema URL) hold every session's spans. OTLP's strings are
UTF-8: a lone surrogate the log keeps (a file name that was not UTF-8, a model's odd output)
goes as U+FFFD (``well_formed``), as a text column of the projections holds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from app.projections.otlp.spans import SCHEMA_URL, AttributeValue, Span

#: The instrumentation scope Chronicle's spans are reported under.
SCOPE = "chronicle"
_KINDS = {"internal": OtlpSpan.SPAN_KIND_INTERNAL, "client": OtlpSpan.SPAN_KIND_CLIENT}
_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` as UTF-8 can carry it: each lone surrogate as U+FFFD (NUL is UTF-8 too)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def export_request(
    spans: Iterable[Span], *, resource: Mapping[str, AttributeValue] | None = None
) -> ExportTraceServiceRequest:
    """The request carrying ``spans``; ``resource``: the resource's attributes (default:
    ``service.name`` = ``chronicle``)."""
    attributes = dict(resource or {"service.name": "chronicle"})
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=_attributes(attributes)),
                scope_spans=[
                    ScopeSpans(
                        scope=InstrumentationScope(name=SCOPE),
                        spans=[_span(span) for span in spans],
                        schema_url=SCHEMA_URL,
                    )
                ],
            )
        ]
    )


def _span(span: Span) -> OtlpSpan:
    status = (
        Status(code=Status.STATUS_CODE_ERROR, message=well_formed(span.error))
        if span.error is not None
        else Status()
    )
    return OtlpSpan(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id or b"",
        name=well_formed(span.name),
        kind=_KINDS[span.kind],
        start_time_unix_nano=span.start_ns,
        end_time_unix_nano=span.end_ns,
        attributes=_attributes(span.attributes),
        status=status,
    )


def _attributes(attributes: Mapping[str, AttributeValue]) -> list[KeyValue]:
    return [
        KeyValue(key=well_formed(key), value=any_value(value)) for key, value in attributes.items()
    ]


def any_value(value: AttributeValue) -> AnyValue:
    """An attribute's value as OTLP's ``AnyValue`` (a bool before an int: it is one too)."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=well_formed(value))
    items = [AnyValue(string_value=well_formed(str(item))) for item in value]
    return AnyValue(array_value=ArrayValue(values=items))
