"""Who is asking: a Bearer token, or a browser's session cookie with its CSRF header.

Every request but health, login and the OpenAPI document names a live token:

- ``Authorization: Bearer <token>`` (an ``api`` token from ``chronicle tokens create``), or
  on the model gateway's paths (``/v1/...``) ``x-api-key: <token>``, as agents' SDKs send
  their API key;
- or the ``chronicle_session`` cookie that ``POST /api/login`` or ``POST /api/login/code``
  sets (a browser login of its own, ``app/server/sql/logins.py``: HttpOnly, SameSite=Strict, ended
  by ``POST /api/logout``, by revoking the token it was made with, or by disabling its user;
  ``Principal.token_id`` is then the login's id). A request authenticated by
  that cookie with an unsafe method (anything but GET, HEAD, OPTIONS) must also carry
  ``X-CSRF-Token``: the value the login returned (also in the readable ``chronicle_csrf``
  cookie), an HMAC of the session cookie, so it needs no server secret shared by API
  processes, and another site that makes the browser send the cookie cannot know it.

A cookie request that sends ``X-CSRF-Token`` at all (the page sends it on every request, from
its origin's own storage) must send the right one (a safe one is 401 otherwise): cookies are
the host's whatever the port, so a page on another port (or a sibling domain's ``Domain``
cookie) can set the cookie of a login the attacker made for itself, but not the page's
storage. A Bearer request needs no CSRF header: a browser never adds that header on its own.
A live Bearer token is remembered for ``server_token_cache_seconds`` (``token_cache``) while no
credential has changed anywhere, so a revoked one stops working at once; a cookie is checked
on every request (with its user and the token it was made with). Credentials that are refused
count against the client's address (``auth_failures``): past ``server_auth_failures`` a
minute, its requests with credentials are answered 429 before any lookup, but for credentials
this process has seen work (a guesser must not lock out those who share its address). The
middleware puts the ``Principal`` in ``request.user``; the ``authenticated`` guard on the API
router refuses any route that somehow ran without one.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import (
    NotAuthorizedException,
    PermissionDeniedException,
    TooManyRequestsException,
)
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware.authentication import (
    AbstractAuthenticationMiddleware,
    AuthenticationResult,
)

from app.config import Settings
from app.external.session_scope import scoped_session
from app.server.auth_failures import FailureLimiter, KnownCredentials, TooManyFailures
from app.server.client_address import address_of
from app.server.context import ServerContext
from app.server.sql.credential_watch import CredentialWatch
from app.server.sql.logins import authenticate_login
from app.server.token_cache import TokenCache
from app.sessions.sql.users import Principal, authenticate
from app.store import EventStore

SESSION_COOKIE = "chronicle_session"
CSRF_COOKIE = "chronicle_csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Paths anyone may reach: liveness / readiness probes and the OpenAPI document.
PUBLIC_PATHS = ["^/health/", "^/schema"]
#: The route option that marks a route as reachable without a token (the login).
PUBLIC_OPTION = "public"
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="chronicle"'}
#: The key of the app's ``AuthState`` in its state.
AUTH_STATE = "auth"
#: Where the model gateway answers (app/server/gateway_routes.py): there a token may also come
#: as ``x-api-key``, as an agent's SDK sends its API key.
MODEL_PATHS = ("/v1/",)


@dataclass
class AuthState:
    """One app's credential machinery: the change watch, the token cache that trusts it, and
    the failure limiter. Made by ``create_app``; the watch runs from start-up to shutdown."""

    watch: CredentialWatch
    tokens: TokenCache
    failures: FailureLimiter
    #: Credentials seen working here: looked up even while their address is blocked.
    known: KnownCredentials

    @classmethod
    def of(cls, store: EventStore, settings: Settings) -> AuthState:
        watch = CredentialWatch(store.connect, keepalive=store.config.poll_interval)
        return cls(
            watch=watch,
            tokens=TokenCache(settings.server.token_cache_seconds, watch),
            failures=FailureLimiter(settings.server.auth_failures),
            known=KnownCredentials(),
        )


def auth_state(connection: ASGIConnection[Any, Any, Any, Any]) -> AuthState:
    found = connection.app.state.get(AUTH_STATE)
    assert isinstance(found, AuthState), "create_app puts an AuthState in the app's state"
    return found


def _failing_address(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    """The address failures count against (the peer as the server sees it)."""
    return address_of(connection.scope) or "unknown"


def refuse_if_failing(connection: ASGIConnection[Any, Any, Any, Any]) -> None:
    """429 with Retry-After while the client's address has spent its failures."""
    try:
        auth_state(connection).failures.check(_failing_address(connection))
    except TooManyFailures as exc:
        raise TooManyRequestsException(
            str(exc), headers={"Retry-After": str(exc.retry_after)}
        ) from None


def cookie_credential(cookie: str) -> str:
    """How a session cookie is named among the credentials seen working."""
    return f"cookie:{cookie}"


def remember_login(connection: ASGIConnection[Any, Any, Any, Any], cookie: str) -> None:
    """A login this process just made is a credential seen working."""
    auth_state(connection).known.worked(cookie_credential(cookie))


def count_failure(connection: ASGIConnection[Any, Any, Any, Any]) -> None:
    auth_state(connection).failures.failed(_failing_address(connection))


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


def model_api_key(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    """``x-api-key: <token>`` as ``Bearer <token>``, on the model gateway's paths only
    (``/v1/...``): Anthropic's SDKs send their key so; nothing else of the API takes it."""
    key = connection.headers.get("x-api-key")
    if key is None or not connection.scope.get("path", "").startswith(MODEL_PATHS):
        return None
    return f"Bearer {key}"


def refuse_outside_its_session(
    connection: ASGIConnection[Any, Any, Any, Any], principal: Principal
) -> None:
    """A token scoped to one session (``app.external.session_scope``) is the API key of an
    agent ``chronicle record`` runs, which the agent (or what it runs) can read: it reaches
    the model gateway's paths and nothing else of its user's API (other sessions, tokens,
    steering), 403 otherwise."""
    if not connection.scope.get("path", "").startswith(MODEL_PATHS):
        refuse_an_agents_key(principal, "use a token of your own for the API")


def refuse_an_agents_key(principal: Principal, instead: str) -> None:
    """403 for a token scoped to one session (an agent's model key), saying what to do
    ``instead``."""
    if scoped_session(principal.label) is not None:
        raise PermissionDeniedException(
            f"this token ({principal.label}) is an agent's model key: it reaches the model "
            f"gateway (/v1/...) only; {instead}"
        )


class TokenAuthentication(AbstractAuthenticationMiddleware):
    """Authenticates HTTP and WebSocket connections by Bearer token or session cookie."""

    async def authenticate_request(self, connection: ASGIConnection) -> AuthenticationResult:
        context = connection.app.state.context
        assert isinstance(context, ServerContext)
        authorization = connection.headers.get("authorization") or model_api_key(connection)
        cookie = connection.cookies.get(SESSION_COOKIE)
        # what the request authenticates with: the Bearer header if any, else the cookie
        credential = (
            f"authorization:{authorization}" if authorization else cookie_credential(cookie or "")
        )
        known = auth_state(connection).known
        if (authorization or cookie) and credential not in known:
            refuse_if_failing(connection)
        try:
            token = bearer_token(authorization)
        except NotAuthorizedException:
            count_failure(connection)
            raise
        if token is not None:

            async def look_up(token: str) -> Principal | None:
                return await authenticate(context.store, token, "api")

            principal = await auth_state(connection).tokens.principal(token, look_up)
            if principal is None:
                known.refused(credential)
                count_failure(connection)
                raise NotAuthorizedException(
                    "the token is unknown, revoked or expired (or its user is disabled); ask "
                    "for a new one (chronicle tokens create NAME)",
                    headers=CHALLENGE,
                )
            known.worked(credential)
            refuse_outside_its_session(connection, principal)
            return AuthenticationResult(user=principal, auth=principal.token_id)
        if not cookie:
            raise NotAuthorizedException(
                "no credentials: send 'Authorization: Bearer <token>', or log in with "
                "POST /api/login",
                headers=CHALLENGE,
            )
        principal = await authenticate_login(context.store, cookie)
        if principal is None:
            known.refused(credential)
            count_failure(connection)
            raise NotAuthorizedException(
                "the login has ended (expired, logged out, its token revoked or its user "
                "disabled); log in again",
                headers=CHALLENGE,
            )
        method = connection.scope.get("method", "GET")
        sent = connection.headers.get(CSRF_HEADER)
        matches = sent is not None and hmac.compare_digest(
            sent.encode(), csrf_token_for(cookie).encode()
        )
        if method not in SAFE_METHODS and not matches:
            raise PermissionDeniedException(
                "a request authenticated by the session cookie must send the X-CSRF-Token "
                "header the login returned"
            )
        if sent is not None and not matches:
            # the page sends what its own login returned on every request: a cookie it does
            # not match was set by someone else (another port of the host, a sibling domain),
            # and the page is told it is signed in as nobody
            raise NotAuthorizedException(
                "this browser's login cookie is not the one this page signed in with (another "
                "site of this host may have set it); sign in again",
                headers=CHALLENGE,
            )
        known.worked(credential)
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
