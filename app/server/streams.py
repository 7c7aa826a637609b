"""Live streams of a session's events: ``GET /api/sessions/{id}/stream``, as a WebSocket or as
Server-Sent Events on the same path.

The ASGI server tells them apart by the request: with ``Upgrade: websocket`` it is a
WebSocket, else an ``text/event-stream`` response. Both are authenticated like every API route
(Bearer token or the session cookie) and see only the caller's sessions (an admin's: all):
another user's session is a 404, for a WebSocket answered before the handshake completes.

What the client gets: every event with ``seq > after_seq`` (the ``after_seq`` query parameter;
for SSE the ``Last-Event-ID`` header wins over it, so a browser's ``EventSource`` resumes by
itself), first the backlog, then live events, each once and in order, each as the REST events
page shows it (``EventView``). A client that reconnects with the last seq it got misses
nothing and gets nothing twice.

- WebSocket: one text message per event, the ``EventView`` JSON.
- SSE: one message per event, ``id: <seq>`` and ``data: <EventView JSON>``; a comment every
  ``server_stream_keepalive_seconds`` while nothing happens.

A client that falls too far behind (its buffer of ``server_stream_buffer_events`` stayed full
for ``server_stream_stall_seconds``, see ``stream_relay``) is told and closed: a last message
``{"type": "lagging", "detail": ..., "resume_after_seq": N}`` (SSE: ``event: lagging``), then
for a WebSocket the close code 1013 (try again later); it catches up by reconnecting with
``after_seq=N``. When the server shuts down, every stream ends at once the same way: a last
message ``{"type": "closing", ...,  "resume_after_seq": N}`` (SSE: ``event: closing``, then
the response ends), for a WebSocket the close code 1012 (service restart). A user may hold
``server_max_streams_per_user`` streams open at once in one API process (a count per
process, see ``stream_limits``); one more is refused with 429 (a problem document, also for
a WebSocket: the handshake is answered with the HTTP status). A stream whose credentials stop
holding (its token revoked, its login ended, its user disabled, removed or demoted; see
``stream_credentials``) ends with a last message ``{"type": "revoked", "detail": ...}`` (SSE:
``event: revoked``), for a WebSocket the close code 4401: reconnecting is answered 401.

All the streams of one session in this process follow one shared feed (``stream_hub``): one
store subscription per session, each event encoded once (``WireEvent``) for every client.

The stream routes are left out of the OpenAPI document: a tool that calls every documented
route would wait on a stream forever.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit
from uuid import UUID

from litestar import Litestar, Request, WebSocket, get, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath
from litestar.types import ASGIApp, HTTPResponseBodyEvent, Receive, Scope, Send
from pydantic import BaseModel

from app.server.access import ensure_visible
from app.server.auth import auth_state, principal_of
from app.server.context import Context, ServerContext
from app.server.json_text import dumps, json_bytes
from app.server.problems import ApiProblem, Problem, Unprocessable, problem_for, problem_response
from app.server.session_routes import EventView
from app.server.stream_credentials import CredentialCheck
from app.server.stream_hub import StreamHub
from app.server.stream_limits import OpenStreams, TooManyStreamsError
from app.server.stream_relay import RelayEnd, relay
from app.sessions.sql.users import Principal
from app.store import RecordedEvent

log = logging.getLogger(__name__)

STREAM_PATH = "/api/sessions/{session_id:uuid}/stream"
#: The WebSocket close code of a client closed for falling behind (RFC 6455: try again later).
CLOSE_LAGGING = 1013
#: The WebSocket close code when the server fails to read the log.
CLOSE_INTERNAL_ERROR = 1011
#: The WebSocket close code of a stream ended by the server shutting down (service restart).
CLOSE_RESTARTING = 1012
#: The WebSocket close code of a stream whose credentials stopped holding (4000 + 401).
CLOSE_REVOKED = 4401
#: Seconds a client that fell behind has to read what its connection still holds and the
#: message that says where to resume, before the connection is left to close. Its slot and its
#: subscription are freed already: this holds only a socket.
FAREWELL_SECONDS = 30.0
#: Seconds a stream ended by the shutdown has to take its last message before it is dropped.
CLOSING_SECONDS = 1.0
#: What an ``EventSource`` waits before it reconnects (milliseconds).
SSE_RETRY_MS = 1000
#: The key of the app's ``OpenStreams`` in its state.
OPEN_STREAMS_STATE = "open_streams"
#: The key of the app's ``StreamHub`` in its state.
STREAM_HUB_STATE = "stream_hub"


class TooManyStreams(ApiProblem):
    status = HTTPStatus.TOO_MANY_REQUESTS


class CrossSite(ApiProblem):
    status = HTTPStatus.FORBIDDEN


class Lagging(BaseModel):
    """The last message to a client closed for falling behind: where to resume."""

    type: Literal["lagging"] = "lagging"
    detail: str
    #: Reconnect with ``after_seq`` set to this: the last seq the client was sent.
    resume_after_seq: int


class Revoked(BaseModel):
    """The last message of a stream whose credentials stopped holding."""

    type: Literal["revoked"] = "revoked"
    detail: str = (
        "the credentials this stream was opened with no longer hold (token revoked, login "
        "ended, user disabled or changed); sign in again"
    )


class Closing(BaseModel):
    """The last message of a stream ended by the server shutting down: where to resume."""

    type: Literal["closing"] = "closing"
    detail: str
    #: Reconnect (to this or another API process) with ``after_seq`` set to this.
    resume_after_seq: int


def event_json(event: RecordedEvent) -> bytes:
    """One event as the REST events page shows it."""
    view = EventView(
        seq=event.seq,
        event_id=event.event_id,
        kind=event.kind,
        source=event.source,
        cause=event.cause,
        payload=event.payload,
        schema_version=event.schema_version,
        created_at=event.created_at,
        hash=event.hash.hex(),
    )
    return json_bytes(view)


class WireEvent(NamedTuple):
    """One event encoded once for every client: as a WebSocket message and as an SSE one."""

    seq: int
    text: str
    sse: bytes


def wire_event(event: RecordedEvent) -> WireEvent:
    encoded = event_json(event)
    return WireEvent(seq=event.seq, text=encoded.decode(), sse=sse_event(event, encoded))


def closing(end: RelayEnd) -> Closing:
    return Closing(
        detail=(
            "the server is shutting down; reconnect with "
            f"after_seq={end.delivered_seq} to carry on from the last event this client got"
        ),
        resume_after_seq=end.delivered_seq,
    )


def lagging(end: RelayEnd) -> Lagging:
    return Lagging(
        detail=(
            "this client fell too far behind the session's events and was closed; reconnect "
            f"with after_seq={end.delivered_seq} to carry on from the last event it got"
        ),
        resume_after_seq=end.delivered_seq,
    )


def sse_event(event: RecordedEvent, encoded: bytes | None = None) -> bytes:
    """The SSE message of an event (``encoded``: its ``event_json``, if made already)."""
    return b"id: %d\ndata: %s\n\n" % (event.seq, encoded or event_json(event))


def sse_closing(end: RelayEnd) -> bytes:
    return b"event: closing\ndata: %s\n\n" % closing(end).model_dump_json().encode()


def sse_lagging(end: RelayEnd) -> bytes:
    return b"event: lagging\ndata: %s\n\n" % lagging(end).model_dump_json().encode()


def sse_revoked() -> bytes:
    return b"event: revoked\ndata: " + Revoked().model_dump_json().encode() + b"\n\n"


def resume_point(after_seq: str | None, last_event_id: str | None) -> int:
    """The seq a stream starts after: ``Last-Event-ID`` (an SSE reconnect) wins over
    ``after_seq``; 422 for anything but a whole number >= 0."""
    for name, value in (("Last-Event-ID", last_event_id), ("after_seq", after_seq)):
        if value is None or value == "":
            continue
        try:
            seq = int(value.strip())
        except ValueError:
            raise Unprocessable(
                f"{name} must be a seq (a whole number >= 0), not {value!r}"
            ) from None
        if seq < 0:
            raise Unprocessable(f"{name} must be a seq (a whole number >= 0), not {value!r}")
        return seq
    return 0


def open_streams(app: Litestar) -> OpenStreams:
    """This app's count of open streams (made on first use; one per app, never global)."""
    found = app.state.get(OPEN_STREAMS_STATE)
    if not isinstance(found, OpenStreams):
        found = OpenStreams()
        app.state[OPEN_STREAMS_STATE] = found
    return found


def stream_hub(app: Litestar) -> StreamHub[WireEvent]:
    """This app's shared feeds (made on first use; one per app, never global)."""
    found = app.state.get(STREAM_HUB_STATE)
    if not isinstance(found, StreamHub):
        context = app.state.context
        assert isinstance(context, ServerContext)
        found = StreamHub(context.store, wire_event)
        app.state[STREAM_HUB_STATE] = found
    return found


def close_streams(app: Litestar) -> None:
    """End every open stream of the app now (the server is shutting down): each client is
    told where to resume, so an SSE response does not hold the shutdown for its grace time."""
    found = app.state.get(STREAM_HUB_STATE)
    if isinstance(found, StreamHub):
        found.close()


@dataclass(frozen=True)
class StreamPlan:
    """What a stream serves: whose, which session, from where, and its limits."""

    ctx: ServerContext
    principal: Principal
    session_id: UUID
    after_seq: int
    hub: StreamHub[WireEvent]
    #: Ends the stream when its credentials stop holding (None: never checked again).
    credentials: CredentialCheck | None = None

    @property
    def revoked(self) -> bool:
        return self.credentials is not None and self.credentials.revoked

    async def _stopping(self) -> None:
        """The server shuts down, or the stream's credentials stop holding."""
        if self.credentials is None:
            await self.hub.closing.wait()
            return
        waits = [
            asyncio.ensure_future(self.hub.closing.wait()),
            asyncio.ensure_future(self.credentials.ended()),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()

    async def relay(self, send: Any, client_gone: Any, send_idle: Any = None) -> RelayEnd:
        settings = self.ctx.settings
        async with self.hub.following(self.session_id, self.after_seq) as events:
            return await relay(
                events,
                send,
                after_seq=self.after_seq,
                capacity=settings.server.stream_buffer_events,
                stall_seconds=settings.server.stream_stall_seconds,
                client_gone=client_gone,
                idle_seconds=settings.server.stream_keepalive_seconds if send_idle else None,
                send_idle=send_idle,
                closing=self._stopping(),
            )


async def _within(seconds: float, awaitable: Any) -> bool:
    """Await ``awaitable`` for at most ``seconds`` (a send to a client that may read nothing);
    False if it did not finish or the connection failed."""
    try:
        async with asyncio.timeout(seconds):
            await awaitable
    except (TimeoutError, OSError, WebSocketDisconnect):
        return False
    return True


@dataclass(frozen=True)
class EventStream:
    """The SSE response, as an ASGI app: it owns its sends, so it can stop one that a client
    reading nothing holds up, tell the client why, and end."""

    plan: StreamPlan
    streams: OpenStreams

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.plan.ctx.settings.server.max_streams_per_user
        try:
            held = self.streams.holding(self.plan.principal.user_id, limit)
            held.__enter__()
        except TooManyStreamsError as exc:
            await _problem_app(TooManyStreams(str(exc)), scope)(scope, receive, send)
            return
        try:  # the slot is the relay's: a client told to reconnect finds it free
            end = await self._stream(receive, send)
        finally:
            held.__exit__(None, None, None)
        await self._farewell(send, end)

    async def _stream(self, receive: Receive, send: Send) -> RelayEnd:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )

        async def send_event(event: WireEvent) -> None:
            await _body(send, event.sse)

        async def keepalive() -> None:
            await _body(send, b": keep-alive\n\n")

        async def client_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        await _body(send, b"retry: %d\n\n" % SSE_RETRY_MS)
        return await self.plan.relay(send_event, client_gone(), keepalive)

    async def _farewell(self, send: Send, end: RelayEnd) -> None:
        """Tell a client that fell behind where to resume, and end the response; a client
        that reads nothing for ``FAREWELL_SECONDS`` more is left to the server."""
        grace = FAREWELL_SECONDS
        if end.reason == "gone":
            return
        if end.reason == "closing" and self.plan.revoked:
            grace = CLOSING_SECONDS
            if not await _within(grace, _body(send, sse_revoked())):
                return
        elif end.reason == "behind":
            log.info(
                "stream of %s closed: client behind at seq %d",
                self.plan.session_id,
                end.delivered_seq,
            )
            if not await _within(grace, _body(send, sse_lagging(end))):
                return
        elif end.reason == "closing":
            grace = CLOSING_SECONDS
            if not await _within(grace, _body(send, sse_closing(end))):
                return
        last: HTTPResponseBodyEvent = {
            "type": "http.response.body",
            "body": b"",
            "more_body": False,
        }
        await _within(grace, send(last))


async def _body(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


def _problem_app(problem: ApiProblem, scope: Scope) -> ASGIApp:
    document, headers = problem_for(problem)
    request: Request[Any, Any, Any] = Request(scope)
    return problem_response(document, headers).to_asgi_response(app=None, request=request)


@get(STREAM_PATH, include_in_schema=False)
async def stream_sse(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> ASGIApp:
    """The session's events as Server-Sent Events (see the module's docstring)."""
    principal = principal_of(request)
    await ensure_visible(ctx, principal, session_id)
    start = resume_point(
        request.query_params.get("after_seq"), request.headers.get("last-event-id")
    )
    plan = StreamPlan(
        ctx=ctx,
        principal=principal,
        session_id=session_id,
        after_seq=start,
        hub=stream_hub(request.app),
        credentials=CredentialCheck(ctx.store, principal, auth_state(request).watch),
    )
    return EventStream(plan=plan, streams=open_streams(request.app))


async def _refuse(socket: WebSocket[Any, Any, Any], problem: ApiProblem) -> None:
    """Answer a WebSocket handshake with the problem's HTTP status and document (the ASGI
    denial response), or, on a server without it, close with 4000 + the status."""
    document: Problem
    document, headers = problem_for(problem)
    if "websocket.http.response" in (socket.scope.get("extensions") or {}):
        body = dumps(document.model_dump(exclude_none=True))
        await socket.send(
            {
                "type": "websocket.http.response.start",
                "status": document.status,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                    *((k.lower().encode(), v.encode()) for k, v in headers.items()),
                ],
            }
        )
        await socket.send(
            {"type": "websocket.http.response.body", "body": body, "more_body": False}
        )
    else:
        await socket.close(code=4000 + document.status, reason=document.detail[:120])


@websocket(STREAM_PATH)
async def stream_websocket(
    socket: WebSocket[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> None:
    """The session's events over a WebSocket (see the module's docstring)."""
    principal = principal_of(socket)
    try:
        refuse_cross_site(socket, principal)
        await ensure_visible(ctx, principal, session_id)
        start = resume_point(socket.query_params.get("after_seq"), None)
        held = open_streams(socket.app).holding(
            principal.user_id, ctx.settings.server.max_streams_per_user
        )
        held.__enter__()
    except TooManyStreamsError as exc:
        await _refuse(socket, TooManyStreams(str(exc)))
        return
    except ApiProblem as exc:
        await _refuse(socket, exc)
        return
    plan = StreamPlan(
        ctx=ctx,
        principal=principal,
        session_id=session_id,
        after_seq=start,
        hub=stream_hub(socket.app),
        credentials=CredentialCheck(ctx.store, principal, auth_state(socket).watch),
    )
    try:  # the slot is the relay's: a client told to reconnect finds it free
        await socket.accept()
        end = await _relay_to_websocket(socket, plan)
    finally:
        held.__exit__(None, None, None)
    await _close_websocket(socket, plan, end)


def refuse_cross_site(socket: WebSocket[Any, Any, Any], principal: Principal) -> None:
    """A WebSocket authenticated by the login cookie must come from a page of this server: a
    browser sends the cookie with a WebSocket handshake that another site's page opens (no
    CORS applies to WebSockets), so its ``Origin`` must name this host."""
    if principal.token_kind != "cookie":
        return
    origin = socket.headers.get("origin")
    if origin is None:
        return  # not a browser: browsers always send Origin with a WebSocket handshake
    host = socket.headers.get("host", "")
    if urlsplit(origin).netloc.lower() != host.lower():
        raise CrossSite(
            f"a WebSocket from {origin} may not use this server's login cookie; open it from "
            "a page of this server, or send a Bearer token"
        )


async def _relay_to_websocket(
    socket: WebSocket[Any, Any, Any], plan: StreamPlan
) -> RelayEnd | None:
    """Relay the events; None if reading the log failed."""

    async def send_event(event: WireEvent) -> None:
        await socket.send_text(event.text)

    async def client_gone() -> None:
        # what a client sends is read and dropped; its close ends the stream
        while (await socket.receive())["type"] != "websocket.disconnect":
            pass

    try:
        return await plan.relay(send_event, client_gone())
    except Exception:
        log.exception("stream of session %s failed", plan.session_id)
        return None


async def _close_websocket(
    socket: WebSocket[Any, Any, Any], plan: StreamPlan, end: RelayEnd | None
) -> None:
    """Say why the stream ends (a client that fell behind: where to resume) and close."""
    grace = FAREWELL_SECONDS
    if end is None:
        await _within(
            grace, socket.close(CLOSE_INTERNAL_ERROR, "the server could not read the log")
        )
    elif end.reason == "closing" and plan.revoked:
        grace = CLOSING_SECONDS
        if await _within(grace, socket.send_text(Revoked().model_dump_json())):
            await _within(grace, socket.close(CLOSE_REVOKED, "credentials no longer hold"))
    elif end.reason == "behind":
        log.info("stream of %s closed: client behind at seq %d", plan.session_id, end.delivered_seq)
        if await _within(grace, socket.send_text(lagging(end).model_dump_json())):
            reason = f"lagging; resume with after_seq={end.delivered_seq}"
            await _within(grace, socket.close(CLOSE_LAGGING, reason))
    elif end.reason == "closing":
        grace = CLOSING_SECONDS
        if await _within(grace, socket.send_text(closing(end).model_dump_json())):
            reason = f"server restarting; resume with after_seq={end.delivered_seq}"
            await _within(grace, socket.close(CLOSE_RESTARTING, reason))
    elif end.reason != "gone":
        await _within(grace, socket.close())


ROUTES = [stream_sse, stream_websocket]
