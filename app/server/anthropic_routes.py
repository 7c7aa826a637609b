"""The model gateway's routes for Anthropic's protocol: ``POST /v1/messages`` and
``POST /v1/messages/count_tokens``.

The same gateway as OpenAI's route (``gateway_routes``: the body bounded by
``gateway_max_body_bytes``, the model routing, the session chosen by ``X-Chronicle-Session``
or the token, the call recorded as an ``llm.call``), with the request and the reply in
Anthropic's shapes (``app.external.anthropic_*``). The agent's API key is a Chronicle token,
sent as ``x-api-key`` (how Anthropic's SDKs send it) or ``Authorization: Bearer``; every error
of the route, the authentication middleware's included, is answered in Anthropic's error
shape, which the SDKs raise as their typed errors.
"""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import Request, Response, post
from litestar.response.base import ASGIResponse
from litestar.types import ASGIApp

from app.external import anthropic_protocol, anthropic_stream
from app.external.anthropic_models import CountTokensRequest, parse_request
from app.external.anthropic_reply import reply_message
from app.external.errors import GatewayError
from app.external.limits import LIMITS_HEADER
from app.external.sessions import SESSION_HEADER
from app.llm.token_count import prompt_tokens
from app.server.auth import principal_of
from app.server.context import Context
from app.server.gateway_routes import OPENAI_PREFIX, gateway_of, json_body
from app.server.gateway_stream import StreamedCall
from app.server.json_text import dumps
from app.server.problems import problem_for


def anthropic_errors(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Any error of the route as Anthropic's error document."""
    if isinstance(exc, GatewayError):
        status, message, headers = exc.status, exc.message, exc.headers
    else:
        problem, headers = problem_for(exc)
        status, message = problem.status, problem.detail or problem.title
    body = anthropic_protocol.error_body(status, message)
    return Response(
        content=dumps(body), status_code=status, media_type="application/json", headers=headers
    )


@post(
    f"{OPENAI_PREFIX}/messages",
    request_max_body_size=None,  # read here, bounded by gateway_max_body_bytes
    exception_handlers={Exception: anthropic_errors},
    include_in_schema=False,
)
async def messages(request: Request[Any, Any, Any], ctx: Context) -> ASGIApp:
    """Anthropic's Messages, sent upstream and recorded as an ``llm.call``. Answered by an
    ASGI app either way (Litestar would serialize any other object a handler returns)."""
    body = await json_body(request, ctx.settings.gateway.max_body_bytes)
    parsed = parse_request(body)
    chat = anthropic_protocol.chat_request(parsed)
    gateway = gateway_of(request.app)
    gateway.calls.routes.upstream(chat.model)  # a model not allowed touches no session
    session_id = await gateway.sessions.session_for(
        principal_of(request),
        request.headers.get(SESSION_HEADER),
        request.headers.get("user-agent"),
        request.headers.get(LIMITS_HEADER),
    )
    headers = {"X-Chronicle-Session": str(session_id)}
    if chat.stream:
        stream = gateway.calls.stream(session_id, chat)

        def frames(first: Any, rest: Any) -> Any:
            return anthropic_stream.stream_frames(first, rest, stream, parsed.model)

        return StreamedCall(
            stream=stream,
            frames=frames,
            error_body=anthropic_protocol.error_body,
            headers=[(k.lower().encode(), v.encode()) for k, v in headers.items()],
        )
    reply = await gateway.calls.complete(session_id, chat)
    return ASGIResponse(
        body=dumps(reply_message(reply, chat, parsed.model)),
        media_type="application/json",
        headers=headers,
    )


@post(
    f"{OPENAI_PREFIX}/messages/count_tokens",
    request_max_body_size=None,  # read here, bounded by gateway_max_body_bytes
    exception_handlers={Exception: anthropic_errors},
    include_in_schema=False,
)
async def count_tokens(request: Request[Any, Any, Any], ctx: Context) -> ASGIApp:
    """How many input tokens a request would send (``app.llm.token_count``): counted here,
    for the model that would answer it; no model is called and nothing is recorded."""
    body = await json_body(request, ctx.settings.gateway.max_body_bytes)
    parsed = parse_request(body, CountTokensRequest)
    chat = anthropic_protocol.chat_request(parsed)
    upstream = gateway_of(request.app).calls.routes.upstream(chat.model)
    counted = await asyncio.to_thread(prompt_tokens, upstream, chat.messages, chat.tools)
    return ASGIResponse(body=dumps({"input_tokens": counted}), media_type="application/json")


ROUTES = [messages, count_tokens]
