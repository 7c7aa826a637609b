"""The model gateway's routes (OpenAI's protocol): ``POST /v1/chat/completions``,
``GET /v1/models`` and ``GET /v1/models/{model}``; and Chronicle's own
``POST /v1/chronicle/replay/settled`` (``chronicle record --replay`` waits on it). See
app/external and docs/gateway.md.

The agent's API key is a Chronicle token (``Authorization: Bearer`` or ``x-api-key``, checked by
the authentication middleware as for every route). Every error of these routes, the
middleware's included (a wrong token, the rate limit), is answered in OpenAI's error shape,
which the SDKs parse (``openai_errors``). The body is read here, bounded by
``gateway_max_body_bytes`` (an agent's prompt is larger than the rest of the API's bodies):
a larger one is answered 413 once it has been read (up to ``DRAIN_LIMIT``), so that a client
still sending reads the answer instead of a reset connection.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.types import ASGIApp

from app.external import openai_protocol
from app.external.calls import ChatRequest, ExternalCalls
from app.external.errors import GatewayError
from app.external.limits import LIMITS_HEADER
from app.external.replay_appends import SETTLED_PATH
from app.external.sessions import SESSION_HEADER, SessionChooser
from app.server.auth import principal_of
from app.server.bounded_body import bounded_body
from app.server.context import Context, ServerContext
from app.server.gateway_stream import StreamedCall
from app.server.json_text import dumps, holds_escaped_surrogate, loads, utf8_text
from app.server.problems import problem_for
from app.server.request_body import MAX_JSON_DEPTH, json_depth_exceeds

#: The key of the app's gateway (``ExternalCalls`` and ``SessionChooser``) in its state.
GATEWAY_STATE = "gateway"
#: A body over the limit is read (and dropped) up to this many bytes before the 413.
DRAIN_LIMIT = 64 * 1024 * 1024
#: What path a route answers to is the model protocol's (the SDKs append it to a base URL).
OPENAI_PREFIX = "/v1"


class Gateway:
    """One app's gateway: the calls and the sessions they go to."""

    def __init__(self, ctx: ServerContext) -> None:
        self.calls = ExternalCalls(ctx.store, ctx.settings)
        self.sessions = SessionChooser(ctx.store)


def gateway_of(app: Litestar) -> Gateway:
    found = app.state.get(GATEWAY_STATE)
    if not isinstance(found, Gateway):
        context = app.state.context
        assert isinstance(context, ServerContext)
        found = Gateway(context)
        app.state[GATEWAY_STATE] = found
    return found


async def close_gateway(app: Litestar) -> None:
    """At shutdown: the streamed calls in flight are cut and recorded."""
    found = app.state.get(GATEWAY_STATE)
    if isinstance(found, Gateway):
        await found.calls.close()


def openai_errors(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Any error of the OpenAI routes as OpenAI's error document."""
    if isinstance(exc, GatewayError):
        status, message, code, headers = exc.status, exc.message, exc.code, exc.headers
    else:
        problem, headers = problem_for(exc)
        status, message, code = problem.status, problem.detail or problem.title, None
        if status == 401:
            code = "invalid_api_key"
        elif status == 413:
            code = "request_too_large"
        elif status == 429:
            code = "rate_limit_exceeded"
    body = openai_protocol.error_body(status, message, code)
    return Response(
        content=dumps(body), status_code=status, media_type="application/json", headers=headers
    )


async def json_body(request: Request[Any, Any, Any], limit: int) -> Any:
    """The request's JSON body, at most ``limit`` bytes (413 past it, 400 if not JSON)."""
    too_large = GatewayError(
        413,
        "too_large",
        f"the request body is larger than this gateway takes ({limit} bytes: "
        "gateway_max_body_bytes); send a shorter conversation",
        code="request_too_large",
    )
    return decoded(await bounded_body(request, limit, too_large, drain_limit=DRAIN_LIMIT))


def decoded(body: bytes) -> Any:
    """JSON text as the API reads it (``BoundedJsonRequest``): depth-bounded, lone surrogate
    escapes kept; ``GatewayError`` 400 otherwise."""
    if json_depth_exceeds(body):
        raise GatewayError(
            400, "invalid_request", f"the JSON body is nested more than {MAX_JSON_DEPTH} levels"
        )
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as refused:
        try:
            text = utf8_text(body)
        except ValueError as exc:
            raise GatewayError(400, "invalid_request", str(exc)) from None
        if holds_escaped_surrogate(body):
            try:
                return loads(text)
            except ValueError:
                pass
        raise GatewayError(
            400, "invalid_request", f"the body is not valid JSON: {refused}"
        ) from None


def _session_header(session_id: Any) -> dict[str, str]:
    return {"X-Chronicle-Session": str(session_id)}


@post(
    f"{OPENAI_PREFIX}/chat/completions",
    request_max_body_size=None,  # read here, bounded by gateway_max_body_bytes
    exception_handlers={Exception: openai_errors},
    include_in_schema=False,
)
async def chat_completions(request: Request[Any, Any, Any], ctx: Context) -> ASGIApp:
    """OpenAI's chat completions, sent upstream and recorded as an ``llm.call``."""
    body = await json_body(request, ctx.settings.gateway.max_body_bytes)
    chat: ChatRequest = openai_protocol.chat_request(body)
    gateway = gateway_of(request.app)
    gateway.calls.routes.upstream(chat.model)  # a model not allowed touches no session
    session_id = await gateway.sessions.session_for(
        principal_of(request),
        request.headers.get(SESSION_HEADER),
        request.headers.get("user-agent"),
        request.headers.get(LIMITS_HEADER),
    )
    headers = _session_header(session_id)
    if chat.stream:
        stream = gateway.calls.stream(session_id, chat)

        def frames(first: Any, rest: Any) -> Any:
            return openai_protocol.stream_frames(first, rest, stream, chat)

        return StreamedCall(
            stream=stream,
            frames=frames,
            error_body=openai_protocol.error_body,
            headers=[(k.lower().encode(), v.encode()) for k, v in headers.items()],
        )
    reply = await gateway.calls.complete(session_id, chat)
    answer = Response(
        content=dumps(openai_protocol.completion(reply, chat)),
        media_type="application/json",
        headers=headers,
    )
    return answer.to_asgi_response(app=None, request=request)


@post(
    SETTLED_PATH,
    status_code=200,
    exception_handlers={Exception: openai_errors},
    include_in_schema=False,
)
async def replay_settled(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Once every call this process served the token's replay session is in the session's
    log (``app.external.replay_appends``): what ``chronicle record --replay`` waits for
    before it records the command's end; an error if one could not be written. Answers
    which serving process settled it (``ReplayServing.instance``)."""
    gateway = gateway_of(request.app)
    session_id = await gateway.sessions.session_for(
        principal_of(request),
        request.headers.get(SESSION_HEADER),
        request.headers.get("user-agent"),
    )
    replays = gateway.calls.replays
    await replays.settled(session_id)
    body = {"session": str(session_id), "gateway": str(replays.instance)}
    return Response(content=dumps(body), media_type="application/json")


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "chronicle"}


@get(
    f"{OPENAI_PREFIX}/models",
    exception_handlers={Exception: openai_errors},
    include_in_schema=False,
)
async def list_models(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The model names an agent may ask for (those that are not patterns)."""
    names = gateway_of(request.app).calls.routes.listed()
    body = {"object": "list", "data": [_model(name) for name in names]}
    return Response(content=dumps(body), media_type="application/json")


@get(
    f"{OPENAI_PREFIX}/models/{{model:path}}",
    exception_handlers={Exception: openai_errors},
    include_in_schema=False,
)
async def get_model(request: Request[Any, Any, Any], model: str) -> Response[bytes]:
    """One model name an agent may ask for (404 in OpenAI's shape if it may not)."""
    name = model.lstrip("/")
    gateway_of(request.app).calls.routes.upstream(name)
    return Response(content=dumps(_model(name)), media_type="application/json")


ROUTES = [chat_completions, list_models, get_model, replay_settled]
