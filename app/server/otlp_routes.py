"""``POST /v1/traces``: OTLP/HTTP trace exports from instrumented applications.

The path is OTLP/HTTP's own, so an exporter pointed at Chronicle's address
(``OTEL_EXPORTER_OTLP_ENDPOINT``, or ``..._TRACES_ENDPOINT`` with the path) sends here; it
authenticates with a Chronicle token (``OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer
<token>``, ``%20`` for the space) like every route. Both encodings are taken, binary
protobuf and OTLP JSON, gzipped or not; the answer is an empty ``ExportTraceServiceResponse``
in the request's encoding (every span was taken) once the spans are stored. They become
events of the user's sessions when their trace settles (app/interchange/otel/receiving.py),
moments later, by the process's ``TraceSettler``.

Refusals, as OTLP/HTTP expects them: 400 for a body that is not an export (never retried by
an exporter), 413 for a body over ``server_otlp_max_body_bytes`` (gzipped or not) or more
than ``server_otlp_max_spans`` spans, 415 for another content type; each a problem document
saying why.
"""

from __future__ import annotations

import asyncio
import zlib
from http import HTTPStatus
from typing import Any

from litestar import Litestar, Request, Response, post

from app.interchange.otel.received import BadTraces, TooManySpans, decode
from app.interchange.otel.receiving import TraceSettler, receive
from app.server.auth import principal_of
from app.server.bounded_body import bounded_body
from app.server.context import Context, ServerContext
from app.server.problems import ApiProblem

SETTLER_STATE = "otlp_settler"
#: A body over the limit is read (and dropped) up to this many bytes before the 413, so a
#: client still sending reads the answer instead of a reset connection.
DRAIN_LIMIT = 256 * 1024 * 1024
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class TracesTooLarge(ApiProblem):
    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE


class TracesRefused(ApiProblem):
    """The body is not an OTLP trace export."""


class TracesMediaType(ApiProblem):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE


def settler_of(app: Litestar) -> TraceSettler:
    found = app.state.get(SETTLER_STATE)
    if not isinstance(found, TraceSettler):
        context = app.state.context
        assert isinstance(context, ServerContext)
        found = TraceSettler(
            context.store, quiet_seconds=context.settings.server.otlp_quiet_seconds
        )
        app.state[SETTLER_STATE] = found
    return found


async def start_settler(app: Litestar) -> None:
    settler_of(app).start()


async def close_settler(app: Litestar) -> None:
    found = app.state.get(SETTLER_STATE)
    if isinstance(found, TraceSettler):
        await found.close()


async def _body(request: Request[Any, Any, Any], limit: int) -> bytes:
    too_large = TracesTooLarge(
        f"the export is larger than this server takes ({limit} bytes: "
        "server_otlp_max_body_bytes); lower the exporter's batch size"
    )
    body = await bounded_body(request, limit, too_large, drain_limit=DRAIN_LIMIT)
    encoding = (request.headers.get("content-encoding") or "identity").strip().lower()
    if encoding == "gzip":
        return _gunzip(body, limit, too_large)
    if encoding != "identity":
        raise TracesMediaType(f"unsupported Content-Encoding {encoding!r}: send gzip or none")
    return body


def _gunzip(body: bytes, limit: int, too_large: ApiProblem) -> bytes:
    """``body`` unzipped, never more than ``limit`` bytes of it (a small bomb stays small)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise TracesRefused(f"the body is not gzip: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise too_large
    return out


@post(
    "/v1/traces",
    status_code=200,
    request_max_body_size=None,  # read here, bounded by server_otlp_max_body_bytes
    include_in_schema=False,
)
async def receive_traces(request: Request[Any, Any, Any], ctx: Context) -> Response[bytes]:
    """Take an OTLP trace export; its spans settle into the user's sessions."""
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media not in (PROTOBUF, "application/protobuf", JSON):
        raise TracesMediaType(
            f"unsupported Content-Type {media or 'none'!r}: send {PROTOBUF} or {JSON}"
        )
    settings = ctx.settings.server
    body = await _body(request, settings.otlp_max_body_bytes)
    try:
        spans = await asyncio.to_thread(decode, body, media, max_spans=settings.otlp_max_spans)
    except TooManySpans as exc:
        raise TracesTooLarge(str(exc)) from None
    except BadTraces as exc:
        raise TracesRefused(str(exc)) from None
    principal = principal_of(request)
    staged = await receive(ctx.store, principal.user_id, spans)
    if staged.rooted:
        settler_of(request.app).wake(principal.user_id, staged.rooted, staged.stored_here(spans))
    # an empty ExportTraceServiceResponse: every span was taken
    content, answer_type = (b"{}", JSON) if media == JSON else (b"", PROTOBUF)
    return Response(content=content, media_type=answer_type, status_code=200)


ROUTES = [receive_traces]
