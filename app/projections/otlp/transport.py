"""Posting spans to an OpenTelemetry collector over OTLP/HTTP (protobuf): one attempt and
what its answer means (``attempt``), and the batch export's posting with a bounded number of
retries (``post``). The live exporter (``exporter.py``) retries without a bound.

What OTLP calls retryable (a connection that failed, 429, 502, 503, 504) is worth trying
again, after the ``Retry-After`` the collector sends if any; anything else it answers with is
a refusal, named by its status and the start of its body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal, NamedTuple
from urllib.parse import urlsplit

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from app.errors import ChronicleError

#: Spans per request: well under the 64 MiB OTLP receivers take by default, contents and all.
MAX_SPANS = 2_000
#: The statuses OTLP/HTTP says to retry.
RETRYABLE = frozenset({429, 502, 503, 504})
TRACES_PATH = "/v1/traces"
#: The longest ``Retry-After`` honoured.
MAX_RETRY_AFTER = 60.0


class OtlpExportError(ChronicleError):
    """The collector could not be reached, or refused the spans; the message says which."""


class Answer(NamedTuple):
    """What one attempt came to: ``taken`` (``response`` is the collector's), ``retry``
    (worth trying again, not before ``retry_after`` seconds) or ``refused`` (it would answer
    the same again); ``status``: the HTTP status (None: no answer); ``why``: for the log."""

    outcome: Literal["taken", "retry", "refused"]
    status: int | None
    why: str
    response: ExportTraceServiceResponse
    retry_after: float = 0.0


def traces_endpoint(url: str) -> str:
    """Where the spans go: ``url`` itself when it names ``/v1/traces``, else that path below
    it (as OTEL_EXPORTER_OTLP_ENDPOINT is read). Refuses what is not an http(s) URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OtlpExportError(f"{url!r} is not an http(s) URL of an OTLP collector")
    if parts.path.rstrip("/").endswith(TRACES_PATH):
        return url
    return url.rstrip("/") + TRACES_PATH


async def attempt(
    client: httpx.AsyncClient, endpoint: str, body: bytes, headers: Mapping[str, str]
) -> Answer:
    """Post ``body`` (an ``ExportTraceServiceRequest``) once; what came of it."""
    sent_headers = {**headers, "Content-Type": "application/x-protobuf"}
    try:
        response = await client.post(endpoint, content=body, headers=sent_headers)
    except httpx.TransportError as exc:
        why = f"cannot reach the OTLP collector at {endpoint}: {exc or type(exc).__name__}"
        return Answer("retry", None, why, ExportTraceServiceResponse())
    if response.status_code < 300:
        return Answer("taken", response.status_code, "", _answer(response))
    why = (
        f"the OTLP collector at {endpoint} answered {response.status_code}: "
        f"{response.text[:200].strip() or response.reason_phrase}"
    )
    if response.status_code in RETRYABLE:
        return Answer(
            "retry", response.status_code, why, ExportTraceServiceResponse(), _retry_after(response)
        )
    return Answer("refused", response.status_code, why, ExportTraceServiceResponse())


async def post(
    client: httpx.AsyncClient,
    endpoint: str,
    body: bytes,
    headers: Mapping[str, str],
    retries: int,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> ExportTraceServiceResponse:
    """Post ``body``, trying again what is retryable up to ``retries`` times with a growing
    pause; the collector's answer, or ``OtlpExportError``."""
    pause = 0.5
    for tried in range(retries + 1):
        answer = await attempt(client, endpoint, body, headers)
        if answer.outcome == "taken":
            return answer.response
        if answer.outcome == "refused" or tried == retries:
            raise OtlpExportError(answer.why)
        pause = max(pause, answer.retry_after)
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
        seconds = float(response.headers.get("retry-after", "0"))
    except ValueError:
        return 0.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
