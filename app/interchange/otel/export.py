"""Sessions sent to an OpenTelemetry collector over OTLP/HTTP (protobuf): ``chronicle export
--otlp URL``.

Each session is read from the log, turned into its trace (``app/projections/otlp/spans.py``)
and posted to the collector's ``/v1/traces`` in requests of at most ``MAX_SPANS`` spans. What
OTLP calls retryable (a connection that failed, 429, 502, 503, 504) is tried again with a
growing pause (a ``Retry-After`` the collector sends is honoured); anything else the collector
answers with is an ``OtlpExportError`` naming its status and the start of its body. The ids come
from the log, so sending a session again gives the collector the same spans.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from uuid import UUID

import httpx
from pydantic import BaseModel

from app.projections.otlp.encoding import export_request
from app.projections.otlp.spans import UNSENT_FIELDS, Span, session_spans
from app.projections.otlp.transport import (
    MAX_SPANS,
    OtlpExportError,
    post,
    traces_endpoint,
)
from app.store import EventStore, collector_paused

__all__ = ["ExportReport", "OtlpExportError", "export_sessions", "session_trace", "traces_endpoint"]


class ExportReport(BaseModel):
    sessions: int = 0
    spans: int = 0
    #: spans the collector said it rejected (OTLP's partial success), with its message
    rejected: int = 0
    rejected_because: str | None = None


async def session_trace(store: EventStore, session: UUID, *, content: bool) -> list[Span]:
    """The session's spans; its prompts' messages are read only when ``content`` asks."""
    events = await store.read(session, leave_out=() if content else UNSENT_FIELDS)
    if not events or _platform_log(events[0].payload):
        return []
    messages: Mapping[str, Mapping[str, object]] | None = None
    if content:
        hashes = sorted(
            {
                str(key)
                for e in events
                if e.kind == "llm.call"
                for key in e.payload.get("prompt") or []
            }
        )
        messages = await store.read_messages(hashes) if hashes else {}
    with collector_paused():  # thousands of spans that all survive: see collector_pause.py
        return session_spans(events, content=content, messages=messages)


async def export_sessions(
    store: EventStore,
    sessions: Sequence[UUID],
    client: httpx.AsyncClient,
    url: str,
    *,
    content: bool = False,
    headers: Mapping[str, str] | None = None,
    retries: int = 5,
    on_session: Callable[[UUID, int], None] | None = None,
) -> ExportReport:
    """Send each session's trace to the collector at ``url`` (see the module)."""
    endpoint = traces_endpoint(url)
    report = ExportReport()
    for session in sessions:
        spans = await session_trace(store, session, content=content)
        for start in range(0, len(spans), MAX_SPANS):
            batch = spans[start : start + MAX_SPANS]
            body = export_request(batch).SerializeToString()
            answer = await post(client, endpoint, body, headers or {}, retries)
            rejected = answer.partial_success.rejected_spans
            if rejected:
                report.rejected += rejected
                report.rejected_because = answer.partial_success.error_message or None
            report.spans += len(batch)
        report.sessions += 1 if spans else 0
        if on_session is not None:
            on_session(session, len(spans))
    return report


def _platform_log(created: Mapping[str, object]) -> bool:
    """Whether the stream is the platform's audit log (no session: app/events/platform_audit)."""
    config = created.get("config")
    return isinstance(config, Mapping) and config.get("platform_log") is True
