"""``POST /api/login`` (a token for a session cookie), ``POST /api/logout``, ``GET /api/me``.

A login makes a ``cookie`` token of its own (never the presented token: logging out revokes
only the browser's login) that lives ``server_login_hours`` at most, and never longer than the
token it was obtained with.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from litestar import Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.exceptions import NotAuthorizedException
from litestar.params import JSONBody
from pydantic import BaseModel, Field

from app.server.auth import (
    CHALLENGE,
    CSRF_COOKIE,
    PUBLIC_OPTION,
    SESSION_COOKIE,
    csrf_token_for,
    principal_of,
)
from app.server.context import Context
from app.server.problems import problem_responses
from app.store.users import authenticate, create_token, revoke_token


class LoginRequest(BaseModel):
    token: str = Field(min_length=1, max_length=512, description="an API token")


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
    secure = ctx.settings.server_secure_cookies or request.url.scheme == "https"
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


@post(
    "/api/login",
    opt={PUBLIC_OPTION: True, "exclude_from_auth": True},
    status_code=200,
    responses=problem_responses(),
)
async def login(
    request: Request[Any, Any, Any], ctx: Context, data: JSONBody[LoginRequest]
) -> Response[LoginResult]:
    """Exchange an API token for a browser session cookie (HttpOnly, SameSite=Strict)."""
    principal = await authenticate(ctx.store, data.token, "api")
    if principal is None:
        raise NotAuthorizedException("the token is unknown, revoked or expired", headers=CHALLENGE)
    expires = datetime.now(UTC) + timedelta(hours=ctx.settings.server_login_hours)
    if principal.expires_at is not None:
        expires = min(expires, principal.expires_at)
    _, session = await create_token(
        ctx.store,
        principal.user_id,
        label=f"login with token {principal.token_id}",
        expires_at=expires,
        kind="cookie",
    )
    result = LoginResult(
        user=principal.name,
        is_admin=principal.is_admin,
        expires_at=expires,
        csrf_token=csrf_token_for(session),
    )
    return Response(result, cookies=_cookies(request, ctx, session, expires))


@post("/api/logout", status_code=200, responses=problem_responses())
async def logout(request: Request[Any, Any, Any], ctx: Context) -> Response[dict[str, str]]:
    """End a browser login (its cookie token is revoked); a Bearer token is left alone."""
    principal = principal_of(request)
    if principal.token_kind == "cookie":
        await revoke_token(ctx.store, principal.token_id, user_id=principal.user_id)
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
