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
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

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
    ``service.name`` = ``chronicle``). Built in place (``add()`` and field assignment): twice
    as fast as building each message and copying it into its parent (measured, upb)."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    _fill(resource_spans.resource.attributes, resource or {"service.name": "chronicle"})
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = SCOPE
    scope_spans.schema_url = SCHEMA_URL
    added = scope_spans.spans
    for span in spans:
        _span(added.add(), span)
    return request


def _span(target: OtlpSpan, span: Span) -> None:
    target.trace_id = span.trace_id
    target.span_id = span.span_id
    if span.parent_span_id:
        target.parent_span_id = span.parent_span_id
    target.name = well_formed(span.name)
    target.kind = _KINDS[span.kind]  # type: ignore[assignment]
    target.start_time_unix_nano = span.start_ns
    target.end_time_unix_nano = span.end_ns
    _fill(target.attributes, span.attributes)
    if span.error is not None:
        target.status.code = Status.STATUS_CODE_ERROR
        target.status.message = well_formed(span.error)


def _fill(target: Any, attributes: Mapping[str, AttributeValue]) -> None:
    add = target.add
    for key, value in attributes.items():
        pair = add()
        pair.key = key if key.isascii() else well_formed(key)
        if type(value) is str:  # most values: inline, as _set_value does it
            pair.value.string_value = value if value.isascii() else well_formed(value)
        else:
            _set_value(pair.value, value)


def _set_value(target: AnyValue, value: AttributeValue) -> None:
    """An attribute's value into OTLP's ``AnyValue`` (a bool before an int: it is one too)."""
    if isinstance(value, str):
        target.string_value = well_formed(value)
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    else:
        items = target.array_value.values
        for item in value:
            items.add().string_value = well_formed(str(item))


def any_value(value: AttributeValue) -> AnyValue:
    """An attribute's value as OTLP's ``AnyValue``."""
    made = AnyValue()
    _set_value(made, value)
    return made
