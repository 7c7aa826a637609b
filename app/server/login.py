"""``POST /api/login`` (a token for a session cookie), ``POST /api/login/code`` (a sign-in
link's one-time code for one), ``POST /api/login/code/peek`` (whom a code signs in as, before
the person agrees to use it), ``POST /api/logout``, ``GET /api/me``.

A login makes a browser login of its own (``app/server/sql/logins.py``; never the presented token:
logging out ends only the browser's login) that lives ``server_login_hours`` at most, never
longer than the token it was obtained with, and ends when that token is revoked or its user
disabled.

Both ways in are for the page itself only (login CSRF: another site must not sign a visitor
into an account of its choosing): they take ``application/json`` only (an HTML form cannot
send it, and a cross-site ``fetch`` that does needs a CORS preflight this server never
grants), and refuse a request whose ``Sec-Fetch-Site`` or ``Origin`` says another site sent
it. A sign-in link carries a one-time code in its fragment (``/login#code=...``), which the
browser never sends: the page peeks at it first, to ask "Sign in as NAME?" (another site can
open a link to its own account's code; the person must see whose account it is), then posts it
here. Refused credentials count against the address
(``auth.count_failure``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from litestar import Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.params import JSONBody
from pydantic import BaseModel, Field

from app.server.auth import (
    CHALLENGE,
    CSRF_COOKIE,
    PUBLIC_OPTION,
    SESSION_COOKIE,
    count_failure,
    csrf_token_for,
    principal_of,
    refuse_an_agents_key,
    refuse_if_failing,
    remember_login,
)
from app.server.client_address import address_of
from app.server.context import Context
from app.server.problems import ApiProblem, problem_responses
from app.server.sql.logins import (
    CodeHolder,
    LoginStarted,
    begin_login,
    end_logins,
    exchange_login_code,
    peek_login_code,
)
from app.sessions import platform_audit
from app.sessions.sql.users import authenticate


class LoginRequest(BaseModel):
    token: str = Field(min_length=1, max_length=512, description="an API token")


class CodeLoginRequest(BaseModel):
    code: str = Field(min_length=1, max_length=512, description="a sign-in link's one-time code")


class NotJson(ApiProblem):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE


#: ``Sec-Fetch-Site`` values of a request the page itself (or the person, typing) made.
OWN_SITE = frozenset({"same-origin", "none"})


def refuse_cross_site(request: Request[Any, Any, Any]) -> None:
    """Only the page itself may sign in: a JSON body, and nothing that says another site sent
    the request (clients that are not browsers send neither header)."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise NotJson("send the login as application/json")
    fetch_site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    host = request.headers.get("host", "").lower()
    if (fetch_site is not None and fetch_site.lower() not in OWN_SITE) or (
        origin is not None and urlsplit(origin).netloc.lower() != host
    ):
        raise PermissionDeniedException(
            "a sign-in must come from this server's own page, not from another site"
        )


class LoginResult(BaseModel):
    user: str
    is_admin: bool
    expires_at: datetime
    #: Send it as ``X-CSRF-Token`` with every unsafe request made with the cookie.
    csrf_token: str


class Me(BaseModel):
    user: str
    is_admin: bool
    token_id: str
    expires_at: datetime | None


def _cookies(
    request: Request[Any, Any, Any], ctx: Context, session: str, expires: datetime
) -> list[Cookie]:
    secure = ctx.settings.server.secure_cookies or request.url.scheme == "https"
    max_age = max(1, int((expires - datetime.now(UTC)).total_seconds()))
    common: dict[str, Any] = {"path": "/", "samesite": "strict", "secure": secure}
    return [
        Cookie(key=SESSION_COOKIE, value=session, httponly=True, max_age=max_age, **common),
        Cookie(
            key=CSRF_COOKIE,
            value=csrf_token_for(session),
            httponly=False,
            max_age=max_age,
            **common,
        ),
    ]


async def _signed_in(
    request: Request[Any, Any, Any], ctx: Context, started: LoginStarted
) -> Response[LoginResult]:
    """Record the login, and answer with its cookies."""
    principal = started.principal
    expires = principal.expires_at
    assert expires is not None  # a browser login always ends
    await platform_audit.logged_in(
        ctx.store,
        platform_audit.api_actor(principal, address_of(request.scope)),
        principal.token_id,
        token_id=started.made_with,
        expires_at=expires,
    )
    result = LoginResult(
        user=principal.name,
        is_admin=principal.is_admin,
        expires_at=expires,
        csrf_token=csrf_token_for(started.cookie),
    )
    remember_login(request, started.cookie)
    return Response(result, cookies=_cookies(request, ctx, started.cookie, expires))


#: What a refused code is told, peeked at or exchanged.
CODE_REFUSED = (
    "the sign-in link is unknown, used or expired (a link works once, for minutes); "
    "ask for a new one (chronicle login-link NAME)"
)


def _address(request: Request[Any, Any, Any]) -> str:
    return address_of(request.scope) or ""


@post(
    "/api/login",
    opt={PUBLIC_OPTION: True, "exclude_from_auth": True},
    status_code=200,
    responses=problem_responses(415),
)
async def login(
    request: Request[Any, Any, Any], ctx: Context, data: JSONBody[LoginRequest]
) -> Response[LoginResult]:
    """Exchange an API token for a browser session cookie (HttpOnly, SameSite=Strict); from
    this server's own page only."""
    refuse_cross_site(request)
    refuse_if_failing(request)
    await refuse_an_agents_login(ctx, data.token)
    hours = ctx.settings.server.login_hours
    started = await begin_login(ctx.store, data.token, hours=hours, address=_address(request))
    if started is None:
        count_failure(request)
        raise NotAuthorizedException(
            "the token is unknown, revoked or expired (or its user is disabled)",
            headers=CHALLENGE,
        )
    return await _signed_in(request, ctx, started)


async def refuse_an_agents_login(ctx: Context, token: str) -> None:
    """No browser login is made with an agent's model key (``auth.refuse_outside_its_session``),
    which would reach the whole API."""
    principal = await authenticate(ctx.store, token, "api")
    if principal is not None:
        refuse_an_agents_key(principal, "sign in with a token of your own")


@post(
    "/api/login/code",
    opt={PUBLIC_OPTION: True, "exclude_from_auth": True},
    status_code=200,
    responses=problem_responses(415),
)
async def login_with_code(
    request: Request[Any, Any, Any], ctx: Context, data: JSONBody[CodeLoginRequest]
) -> Response[LoginResult]:
    """Exchange a sign-in link's one-time code (used up by it) for a browser session cookie;
    from this server's own page only."""
    refuse_cross_site(request)
    refuse_if_failing(request)
    hours = ctx.settings.server.login_hours
    started = await exchange_login_code(
        ctx.store, data.code, hours=hours, address=_address(request)
    )
    if started is None:
        count_failure(request)
        raise NotAuthorizedException(CODE_REFUSED, headers=CHALLENGE)
    return await _signed_in(request, ctx, started)


@post(
    "/api/login/code/peek",
    opt={PUBLIC_OPTION: True, "exclude_from_auth": True},
    status_code=200,
    responses=problem_responses(415),
)
async def peek_login_with_code(
    request: Request[Any, Any, Any], data: JSONBody[CodeLoginRequest], ctx: Context
) -> CodeHolder:
    """Whom a sign-in link's code signs in as, and until when it works; the code stays unused.
    From this server's own page only, and a refused code counts against the address (a peek
    is no cheaper way to guess codes)."""
    refuse_cross_site(request)
    refuse_if_failing(request)
    holder = await peek_login_code(ctx.store, data.code)
    if holder is None:
        count_failure(request)
        raise NotAuthorizedException(CODE_REFUSED, headers=CHALLENGE)
    return holder


@post("/api/logout", status_code=200, responses=problem_responses())
async def logout(request: Request[Any, Any, Any], ctx: Context) -> Response[dict[str, str]]:
    """End a browser login; a Bearer token is left alone."""
    principal = principal_of(request)
    if principal.token_kind == "cookie":
        await end_logins(ctx.store, principal.user_id, principal.token_id)
        await platform_audit.logged_out(
            ctx.store,
            platform_audit.api_actor(principal, address_of(request.scope)),
            principal.token_id,
        )
    gone = [
        Cookie(key=name, value="", max_age=0, path="/", samesite="strict")
        for name in (SESSION_COOKIE, CSRF_COOKIE)
    ]
    return Response({"status": "logged out"}, cookies=gone)


@get("/api/me", responses=problem_responses())
async def me(request: Request[Any, Any, Any]) -> Me:
    """Who the credentials name."""
    principal = principal_of(request)
    return Me(
        user=principal.name,
        is_admin=principal.is_admin,
        token_id=str(principal.token_id),
        expires_at=principal.expires_at,
    )
