"""Who is asking: a Bearer token, or a browser's session cookie with its CSRF header.

Every request but health, login and the OpenAPI document names a live token:

- ``Authorization: Bearer <token>`` (an ``api`` token from ``chronicle tokens create``);
- or the ``chronicle_session`` cookie that ``POST /api/login`` sets (a ``cookie`` token of its
  own, HttpOnly, SameSite=Strict, revoked by ``POST /api/logout``). A request authenticated by
  that cookie with an unsafe method (anything but GET, HEAD, OPTIONS) must also carry
  ``X-CSRF-Token``: the value the login returned (also in the readable ``chronicle_csrf``
  cookie), an HMAC of the session cookie, so it needs no server secret shared by API
  processes, and another site that makes the browser send the cookie cannot know it.

A Bearer request needs no CSRF header: a browser never adds that header on its own. A live
Bearer token is remembered for ``server_token_cache_seconds`` (``token_cache``), so a revoked
one stops working within that bound; a cookie is checked on every request. The middleware
puts the ``Principal`` in ``request.user``; the ``authenticated`` guard on the API router
refuses any route that somehow ran without one.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware.authentication import (
    AbstractAuthenticationMiddleware,
    AuthenticationResult,
)

from app.server.context import ServerContext
from app.server.token_cache import TokenCache
from app.store.users import Principal, authenticate

SESSION_COOKIE = "chronicle_session"
CSRF_COOKIE = "chronicle_csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Paths anyone may reach: liveness / readiness probes and the OpenAPI document.
PUBLIC_PATHS = ["^/health/", "^/schema"]
#: The route option that marks a route as reachable without a token (the login).
PUBLIC_OPTION = "public"
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="chronicle"'}
#: The key of the app's ``TokenCache`` in its state.
TOKEN_CACHE_STATE = "token_cache"


def csrf_token_for(session_token: str) -> str:
    """The CSRF token that goes with a session cookie."""
    return hmac.new(session_token.encode(), b"chronicle-csrf", hashlib.sha256).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (None without one)."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthorizedException(
            "the Authorization header must be 'Bearer <token>'", headers=CHALLENGE
        )
    return token.strip()


def token_cache(connection: ASGIConnection[Any, Any, Any, Any]) -> TokenCache:
    """The app's cache of live Bearer tokens (made on first use; one per app, never global)."""
    state = connection.app.state
    found = state.get(TOKEN_CACHE_STATE)
    if not isinstance(found, TokenCache):
        context = state.context
        assert isinstance(context, ServerContext)
        found = TokenCache(context.settings.server_token_cache_seconds)
        state[TOKEN_CACHE_STATE] = found
    return found


class TokenAuthentication(AbstractAuthenticationMiddleware):
    """Authenticates HTTP and WebSocket connections by Bearer token or session cookie."""

    async def authenticate_request(self, connection: ASGIConnection) -> AuthenticationResult:
        context = connection.app.state.context
        assert isinstance(context, ServerContext)
        token = bearer_token(connection.headers.get("authorization"))
        if token is not None:

            async def look_up(token: str) -> Principal | None:
                return await authenticate(context.store, token, "api")

            principal = await token_cache(connection).principal(token, look_up)
            if principal is None:
                raise NotAuthorizedException(
                    "the token is unknown, revoked or expired; ask for a new one "
                    "(chronicle tokens create NAME)",
                    headers=CHALLENGE,
                )
            return AuthenticationResult(user=principal, auth=principal.token_id)
        cookie = connection.cookies.get(SESSION_COOKIE)
        if not cookie:
            raise NotAuthorizedException(
                "no credentials: send 'Authorization: Bearer <token>', or log in with "
                "POST /api/login",
                headers=CHALLENGE,
            )
        principal = await authenticate(context.store, cookie, "cookie")
        if principal is None:
            raise NotAuthorizedException(
                "the login has ended (expired, logged out or revoked); log in again",
                headers=CHALLENGE,
            )
        method = connection.scope.get("method", "GET")
        if method not in SAFE_METHODS:
            sent = connection.headers.get(CSRF_HEADER, "")
            if not hmac.compare_digest(sent.encode(), csrf_token_for(cookie).encode()):
                raise PermissionDeniedException(
                    "a request authenticated by the session cookie must send the X-CSRF-Token "
                    "header the login returned"
                )
        return AuthenticationResult(user=principal, auth=principal.token_id)


async def authenticated(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """Guard of every API route: the request was authenticated. A coroutine: Litestar runs a
    plain function guard in a worker thread, a thread hop on every request."""
    if not isinstance(connection.scope.get("user"), Principal):
        raise NotAuthorizedException("this route needs a token", headers=CHALLENGE)


def principal_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    user = connection.scope.get("user")
    if not isinstance(user, Principal):
        raise NotAuthorizedException("this route needs a token", headers=CHALLENGE)
    return user
