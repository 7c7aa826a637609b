"""Spans as an OTLP/HTTP client sends them to ``POST /v1/traces``, decoded into plain models.

Both encodings OTLP/HTTP defines are read: binary protobuf (``application/x-protobuf``, with
OpenTelemetry's own generated messages) and the OTLP JSON mapping (``application/json``:
lowerCamelCase keys, hex trace and span ids, enums as integers, 64-bit integers as decimal
strings or numbers, unknown fields ignored), walked as parsed JSON rather than through
protobuf's JSON parser, which is an order of magnitude slower. Either way a span comes out as
a ``ReceivedSpan``: ids as lowercase hex, times in nanoseconds, attributes as Python values
(an array a list, a key-value list a dict, bytes as hex), its resource's ``service.name``.

Bounded: a request of more than ``max_spans`` spans is refused (``TooManySpans``) before any
span is built, so a body can never become millions of objects; a malformed body is a
``BadTraces`` saying where. Pure: bytes in, models out.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from pydantic import BaseModel, ConfigDict, Field

from app.errors import ChronicleError

#: Spans one request may carry (an SDK's batch holds 512 by default).
MAX_SPANS = 50_000
#: How deep an attribute's arrays and key-value lists may nest.
MAX_DEPTH = 16

STATUS_ERROR = 2
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1


class BadTraces(ChronicleError, ValueError):
    """The body is not an OTLP trace export in the encoding its content type names."""


class TooManySpans(ChronicleError, ValueError):
    """The request carries more spans than one request may."""


class SpanEvent(BaseModel):
    """A timed event on a span (an exception, a log line)."""

    model_config = ConfigDict(frozen=True)

    name: str
    time_ns: int = 0
    attributes: dict[str, Any] = Field(default_factory=dict)


class ReceivedSpan(BaseModel):
    """One span as received."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    name: str
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: list[SpanEvent] = Field(default_factory=list)
    status_code: int = 0
    status_message: str = ""
    service: str = ""
    scope: str = ""

    @property
    def failed(self) -> bool:
        return self.status_code == STATUS_ERROR


def decode(body: bytes, content_type: str, *, max_spans: int = MAX_SPANS) -> list[ReceivedSpan]:
    """The spans of an export request in ``content_type``'s encoding (protobuf or JSON)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json":
        return decode_json(body, max_spans=max_spans)
    if media in ("application/x-protobuf", "application/protobuf"):
        return decode_protobuf(body, max_spans=max_spans)
    raise BadTraces(
        f"unsupported content type {content_type!r}: send application/x-protobuf or "
        "application/json"
    )


# --- protobuf ---------------------------------------------------------------------------


def decode_protobuf(body: bytes, *, max_spans: int = MAX_SPANS) -> list[ReceivedSpan]:
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RecursionError) as exc:
        raise BadTraces(f"not an OTLP ExportTraceServiceRequest in protobuf: {exc}") from exc
    count = sum(
        len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans
    )
    _check_count(count, max_spans)
    spans = []
    for resource in request.resource_spans:
        service = _service(_proto_attributes(resource.resource.attributes))
        for scope in resource.scope_spans:
            for span in scope.spans:
                spans.append(
                    ReceivedSpan(
                        trace_id=_hex_id(span.trace_id, 16, "traceId"),
                        span_id=_hex_id(span.span_id, 8, "spanId"),
                        parent_span_id=span.parent_span_id.hex() or None,
                        name=span.name,
                        kind=span.kind,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes=_proto_attributes(span.attributes),
                        events=[
                            SpanEvent(
                                name=event.name,
                                time_ns=event.time_unix_nano,
                                attributes=_proto_attributes(event.attributes),
                            )
                            for event in span.events
                        ],
                        status_code=span.status.code,
                        status_message=span.status.message,
                        service=service,
                        scope=scope.scope.name,
                    )
                )
    return spans


def _hex_id(raw: bytes, size: int, name: str) -> str:
    if len(raw) != size or not any(raw):
        raise BadTraces(f"a span's {name} must be {size} bytes, not all zero")
    return raw.hex()


def _proto_attributes(attributes: Iterator[KeyValue] | Any) -> dict[str, Any]:
    found = {}
    for item in attributes:
        value = item.value
        which = value.WhichOneof("value")
        if which in _SCALARS:  # most attributes: read here, not through _proto_value
            found[item.key] = getattr(value, which)
        else:
            found[item.key] = _proto_value(value, 0)
    return found


_SCALARS = frozenset({"string_value", "int_value", "bool_value", "double_value"})


def _proto_value(value: AnyValue, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise BadTraces(f"an attribute nests deeper than {MAX_DEPTH} levels")
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_proto_value(item, depth + 1) for item in value.array_value.values]
    if which == "kvlist_value":
        return {item.key: _proto_value(item.value, depth + 1) for item in value.kvlist_value.values}
    if which == "bytes_value":
        return value.bytes_value.hex()
    if which is None:
        return None
    return getattr(value, which)


# --- JSON -------------------------------------------------------------------------------


def decode_json(body: bytes, *, max_spans: int = MAX_SPANS) -> list[ReceivedSpan]:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadTraces(f"not JSON: {exc}") from exc
    resources = _list(_object(document, "the request").get("resourceSpans"), "resourceSpans")
    scopes = [
        (resource, scope)
        for resource in resources
        for scope in _list(_object(resource, "resourceSpans[]").get("scopeSpans"), "scopeSpans")
    ]
    count = sum(
        len(_list(_object(scope, "scopeSpans[]").get("spans"), "spans")) for _, scope in scopes
    )
    _check_count(count, max_spans)
    spans = []
    for resource, scope in scopes:
        service = _service(_json_attributes(_object(resource.get("resource"), "resource")))
        scope_name = _string(_object(scope.get("scope"), "scope").get("name"), "scope.name")
        for raw in scope.get("spans") or []:
            span = _object(raw, "a span")
            status = _object(span.get("status"), "status")
            spans.append(
                ReceivedSpan(
                    trace_id=_json_id(span.get("traceId"), 16, "traceId"),
                    span_id=_json_id(span.get("spanId"), 8, "spanId"),
                    parent_span_id=_json_id(span.get("parentSpanId"), 8, "parentSpanId", True),
                    name=_string(span.get("name"), "name"),
                    kind=_integer(span.get("kind"), "kind"),
                    start_ns=_integer(span.get("startTimeUnixNano"), "startTimeUnixNano"),
                    end_ns=_integer(span.get("endTimeUnixNano"), "endTimeUnixNano"),
                    attributes=_json_attributes(span),
                    events=[
                        SpanEvent(
                            name=_string(_object(event, "an event").get("name"), "event name"),
                            time_ns=_integer(event.get("timeUnixNano"), "timeUnixNano"),
                            attributes=_json_attributes(event),
                        )
                        for event in _list(span.get("events"), "events")
                    ],
                    status_code=_integer(status.get("code"), "status.code"),
                    status_message=_string(status.get("message"), "status.message"),
                    service=service,
                    scope=scope_name,
                )
            )
    return spans


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadTraces(f"{where} must be a JSON object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadTraces(f"{where} must be a JSON array")
    return value


def _string(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadTraces(f"{where} must be a string")
    return value


def _integer(value: Any, where: str) -> int:
    """An int64 field: a number or a decimal string (OTLP JSON writes them as strings)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise BadTraces(f"{where} must be an integer")
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) <= 24:
        number = int(value)
    if number is None or not INT64_MIN <= number <= UINT64_MAX:
        raise BadTraces(f"{where} must be a 64-bit integer")
    return number


def _json_id(value: Any, size: int, name: str, optional: bool = False) -> Any:
    if optional and (value is None or value == ""):
        return None
    if not isinstance(value, str) or len(value) != size * 2:
        raise BadTraces(f"a span's {name} must be {size * 2} hex digits")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise BadTraces(f"a span's {name} must be {size * 2} hex digits") from None
    if not any(raw):
        if optional:
            return None
        raise BadTraces(f"a span's {name} must not be all zero")
    return raw.hex()


def _json_attributes(holder: Mapping[str, Any]) -> dict[str, Any]:
    attributes = {}
    for item in _list(holder.get("attributes"), "attributes"):
        pair = _object(item, "an attribute")
        key = _string(pair.get("key"), "an attribute's key")
        attributes[key] = _json_value(pair.get("value"), 0)
    return attributes


def _json_value(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise BadTraces(f"an attribute nests deeper than {MAX_DEPTH} levels")
    value = _object(value, "an attribute's value")
    if "stringValue" in value:
        return _string(value["stringValue"], "stringValue")
    if "boolValue" in value:
        if not isinstance(value["boolValue"], bool):
            raise BadTraces("boolValue must be true or false")
        return value["boolValue"]
    if "intValue" in value:
        return _integer(value["intValue"], "intValue")
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, str) and number in ("NaN", "Infinity", "-Infinity"):
            return float(number)
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise BadTraces("doubleValue must be a number")
        return float(number)
    if "arrayValue" in value:
        items = _list(_object(value["arrayValue"], "arrayValue").get("values"), "values")
        return [_json_value(item, depth + 1) for item in items]
    if "kvlistValue" in value:
        items = _list(_object(value["kvlistValue"], "kvlistValue").get("values"), "values")
        return {
            _string(_object(item, "a key-value").get("key"), "key"): _json_value(
                item.get("value"), depth + 1
            )
            for item in items
        }
    if "bytesValue" in value:
        try:
            return base64.b64decode(_string(value["bytesValue"], "bytesValue"), validate=True).hex()
        except binascii.Error:
            raise BadTraces("bytesValue must be base64") from None
    return None


# --- shared -----------------------------------------------------------------------------


def _check_count(count: int, max_spans: int) -> None:
    if count > max_spans:
        raise TooManySpans(
            f"the request carries {count} spans; at most {max_spans} are taken in one request "
            "(lower the exporter's batch size, e.g. OTEL_BSP_MAX_EXPORT_BATCH_SIZE)"
        )


def _service(resource: Mapping[str, Any]) -> str:
    name = resource.get("service.name")
    return name if isinstance(name, str) else ""
