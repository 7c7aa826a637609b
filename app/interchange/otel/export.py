"""Sessions sent to an OpenTelemetry collector over OTLP/HTTP (protobuf): ``chronicle export
--otlp URL``.

Each session is read from the log, turned into its trace (``spans.py``) and posted to the
collector's ``/v1/traces`` in requests of at most ``MAX_SPANS`` spans. What OTLP calls
retryable (a connection that failed, 429, 502, 503, 504) is tried again with a growing pause
(a ``Retry-After`` the collector sends is honoured); anything else the collector answers
with is an ``OtlpExportError`` naming its status and the start of its body. The ids come
from the log, so sending a session again gives the collector the same spans.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from urllib.parse import urlsplit
from uuid import UUID

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from pydantic import BaseModel

from app.errors import ChronicleError
from app.interchange.otel.otlp import export_request
from app.interchange.otel.spans import Span, session_spans
from app.store import EventStore

#: Spans per request: well under the 64 MiB OTLP receivers take by default, contents and all.
MAX_SPANS = 2_000
#: The statuses OTLP/HTTP says to retry.
RETRYABLE = frozenset({429, 502, 503, 504})
TRACES_PATH = "/v1/traces"


class OtlpExportError(ChronicleError):
    """The collector could not be reached, or refused the spans; the message says which."""


class ExportReport(BaseModel):
    sessions: int = 0
    spans: int = 0
    #: spans the collector said it rejected (OTLP's partial success), with its message
    rejected: int = 0
    rejected_because: str | None = None


def traces_endpoint(url: str) -> str:
    """Where the spans go: ``url`` itself when it names ``/v1/traces``, else that path below
    it (as OTEL_EXPORTER_OTLP_ENDPOINT is read). Refuses what is not an http(s) URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OtlpExportError(f"{url!r} is not an http(s) URL of an OTLP collector")
    if parts.path.rstrip("/").endswith(TRACES_PATH):
        return url
    return url.rstrip("/") + TRACES_PATH


async def session_trace(store: EventStore, session: UUID, *, content: bool) -> list[Span]:
    """The session's spans; its prompts' messages are read only when ``content`` asks."""
    events = await store.read(session)
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
            answer = await _post(client, endpoint, body, headers or {}, retries)
            rejected = answer.partial_success.rejected_spans
            if rejected:
                report.rejected += rejected
                report.rejected_because = answer.partial_success.error_message or None
            report.spans += len(batch)
        report.sessions += 1 if spans else 0
        if on_session is not None:
            on_session(session, len(spans))
    return report


async def _post(
    client: httpx.AsyncClient,
    endpoint: str,
    body: bytes,
    headers: Mapping[str, str],
    retries: int,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> ExportTraceServiceResponse:
    sent_headers = {**headers, "Content-Type": "application/x-protobuf"}
    pause = 0.5
    for attempt in range(retries + 1):
        last = attempt == retries
        try:
            response = await client.post(endpoint, content=body, headers=sent_headers)
        except httpx.TransportError as exc:
            if last:
                raise OtlpExportError(
                    f"cannot reach the OTLP collector at {endpoint}: {exc or type(exc).__name__}"
                ) from None
        else:
            if response.status_code < 300:
                return _answer(response)
            if response.status_code not in RETRYABLE or last:
                raise OtlpExportError(
                    f"the OTLP collector at {endpoint} answered {response.status_code}: "
                    f"{response.text[:200].strip() or response.reason_phrase}"
                )
            pause = max(pause, _retry_after(response))
        await sleep(pause)
        pause = min(pause * 2, 30.0)
    raise AssertionError("unreachable")  # pragma: no cover


def _answer(response: httpx.Response) -> ExportTraceServiceResponse:
    """The collector's answer (empty: all taken); one that is not OTLP's protobuf counts as
    all taken (a collector may answer JSON, or nothing)."""
    if "protobuf" not in response.headers.get("content-type", ""):
        return ExportTraceServiceResponse()
    try:
        return ExportTraceServiceResponse.FromString(response.content)
    except Exception:
        return ExportTraceServiceResponse()


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(max(float(response.headers.get("retry-after", "0")), 0.0), 60.0)
    except ValueError:
        return 0.0


def _platform_log(created: Mapping[str, object]) -> bool:
    """Whether the stream is the platform's audit log (no session: app/events/platform_audit)."""
    config = created.get("config")
    return isinstance(config, Mapping) and config.get("platform_log") is True
