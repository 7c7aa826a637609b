"""The access service's Litestar app: ``create_app(store, settings)``.

Routes come from one module per idea (login, health, sessions, ...); every route but health,
login and the OpenAPI document sits under the ``authenticated`` guard, and the
authentication middleware runs before the per-token rate limit, so each token (or, before
login, each address) gets ``server_rate_limit`` requests a minute, and apart from those
``gateway_rate_limit`` model calls a minute on the model gateway's paths (``/v1/...``: an
agent or a replay makes many calls fast; its spend has the gateway's own limits). Every
error is a problem document (``problems``); bodies over ``server_max_body_bytes`` are
refused with 413.

A module with more routes (the live streams, ``app/server/streams.py``) adds its handlers to
``protected_routes()``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from litestar import Litestar, Request, Router
from litestar.datastructures import State
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.middleware.rate_limit import RateLimitConfig, get_remote_address
from litestar.openapi.config import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import ControllerRouterHandler

from app.config import Settings
from app.server import (
    annotation_routes,
    anthropic_routes,
    audit_routes,
    creation,
    evaluation_routes,
    gateway_routes,
    health,
    login,
    otlp_routes,
    playground_routes,
    redaction_routes,
    replay_routes,
    session_routes,
    steering,
    streams,
    usage_routes,
    user_logins,
    workspace_routes,
)
from app.server.auth import AUTH_STATE, PUBLIC_PATHS, AuthState, TokenAuthentication, authenticated
from app.server.client_address import ClientAddressMiddleware
from app.server.context import ServerContext, provide_context
from app.server.json_text import JsonResponse
from app.server.problems import handle_exception
from app.server.request_body import BoundedJsonRequest
from app.server.schema_page import SchemaPage, schema_router
from app.server.web import web_routes
from app.sessions.sql.users import Principal
from app.store import EventStore

TITLE = "Chronicle"
VERSION = "0.1.0"


def protected_routes() -> list[ControllerRouterHandler]:
    """Every route that needs a token (under the ``authenticated`` guard)."""
    return [
        login.logout,
        login.me,
        *creation.ROUTES,
        *session_routes.ROUTES,
        *steering.ROUTES,
        *annotation_routes.ROUTES,
        *redaction_routes.ROUTES,
        *replay_routes.ROUTES,
        *playground_routes.ROUTES,
        *evaluation_routes.ROUTES,
        *streams.ROUTES,
        *audit_routes.ROUTES,
        *user_logins.ROUTES,
        *gateway_routes.ROUTES,
        *anthropic_routes.ROUTES,
        *otlp_routes.ROUTES,
        *usage_routes.ROUTES,
        *workspace_routes.ROUTES,
    ]


#: The model gateway's paths, counted in a bucket of their own (``gateway_rate_limit``).
MODEL_PATHS_PATTERN = "^/v1/"
OTHER_THAN_MODEL_PATHS = "^/(?!v1/)."  # not "/" alone: Litestar warns of a pattern that matches it


def rate_limit_key(request: Request[Any, Any, Any]) -> str:
    """Whom a request counts against: its token once authenticated, else its address."""
    user = request.scope.get("user")
    if isinstance(user, Principal):
        return f"token:{user.token_id}"
    authorization = request.headers.get("authorization")
    if authorization:  # refused by authentication anyway; counted apart from the address
        return "credential:" + hashlib.sha256(authorization.encode()).hexdigest()
    return "address:" + get_remote_address(request)


def create_app(
    store: EventStore,
    settings: Settings,
    *,
    extra_routes: Sequence[ControllerRouterHandler] = (),
) -> Litestar:
    """The app over this store; ``extra_routes`` are added under the authentication guard."""
    context = ServerContext(store=store, settings=settings)
    api = Router(
        path="/",
        route_handlers=[*protected_routes(), *extra_routes],
        guards=[authenticated],
        security=[{"bearer": []}],
    )
    rate_limit = RateLimitConfig(
        rate_limit=("minute", settings.server.rate_limit),
        exclude=[*PUBLIC_PATHS, MODEL_PATHS_PATTERN],
        identifier_for_request=rate_limit_key,
    )
    model_rate_limit = RateLimitConfig(
        rate_limit=("minute", settings.gateway.rate_limit),
        exclude=OTHER_THAN_MODEL_PATHS,
        identifier_for_request=rate_limit_key,
        store="gateway_rate_limit",
    )
    auth = AuthState.of(store, settings)
    return Litestar(
        route_handlers=[
            health.live,
            health.ready,
            login.login,
            login.login_with_code,
            login.peek_login_with_code,
            api,
            *web_routes(),
        ],
        state=State({"context": context, AUTH_STATE: auth}),
        on_startup=[auth.watch.start, otlp_routes.start_settler],
        on_shutdown=[auth.watch.close, gateway_routes.close_gateway, otlp_routes.close_settler],
        dependencies={"ctx": Provide(provide_context, sync_to_thread=False)},
        middleware=[
            ClientAddressMiddleware,
            DefineMiddleware(
                TokenAuthentication, exclude=PUBLIC_PATHS, exclude_from_auth_key="exclude_from_auth"
            ),
            rate_limit.middleware,
            model_rate_limit.middleware,
        ],
        exception_handlers={Exception: handle_exception},
        request_max_body_size=settings.server.max_body_bytes,
        request_class=BoundedJsonRequest,
        response_class=JsonResponse,
        openapi_config=OpenAPIConfig(
            title=TITLE,
            version=VERSION,
            path="/schema",
            # a page of our own: Litestar's pages load unpinned scripts from a CDN
            render_plugins=[SchemaPage()],
            openapi_router=schema_router(),
            components=Components(
                security_schemes={
                    "bearer": SecurityScheme(
                        type="http",
                        scheme="bearer",
                        description="a token from chronicle tokens create",
                    )
                }
            ),
        ),
        debug=False,
    )
