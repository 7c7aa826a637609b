"""A span an instrumented application sent (``POST /v1/traces``) that is not a model call or
a tool execution: an HTTP request, a database query, a step of the application's own.

The GenAI spans of a trace become the log's own kinds (``llm.call``, an ``imported`` action
and its ``imported.output``; see app/interchange/otel/received_events.py); every other span of
the trace is kept beside them as one of these, so nothing the application reported is dropped
and the session still says what else happened while the agent worked. Nothing runs them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.events.base import Event, Source


class OtelSpan(Event):
    """One received span as it came: ids in hex, times in Unix nanoseconds, ``kind`` and
    ``status_code`` as OTLP numbers them, ``attributes`` and ``events`` as sent."""

    kind: Literal["otel.span"] = "otel.span"
    source: Source = "environment"
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    span_kind: int = 0
    start_ns: int = Field(default=0, ge=0)
    end_ns: int = Field(default=0, ge=0)
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)
    status_code: int = 0
    status_message: str = ""
    service: str = ""
    scope: str = ""


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (OtelSpan,)
