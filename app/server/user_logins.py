"""An admin's view of a user's browser logins: ``GET /api/users/{name}/logins`` lists the live
ones (where from, since when, made with which token), ``POST /api/users/{name}/logout`` ends
them all at once (the ``chronicle users logins|logout NAME`` of the API). Members get 403.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, get, post
from litestar.connection import ASGIConnection
from litestar.exceptions import PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from pydantic import BaseModel

from app.server.auth import principal_of
from app.server.client_address import client_address
from app.server.context import Context
from app.server.problems import NotFound, problem_responses
from app.server.sql.logins import BrowserLogin, end_logins, list_logins
from app.sessions import platform_audit
from app.sessions.sql.users import User, find_user


async def admins_only(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: the credentials are an admin's (403 for a member)."""
    if not principal_of(connection).is_admin:
        raise PermissionDeniedException("a user's logins are for admins only")


class LoginsEnded(BaseModel):
    user: str
    #: How many live logins were ended.
    ended: int


async def _user(ctx: Context, name: str) -> User:
    user = await find_user(ctx.store, name)
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return user


@get("/api/users/{name:str}/logins", guards=[admins_only], responses=problem_responses(404))
async def user_logins(ctx: Context, name: str) -> list[BrowserLogin]:
    """The user's live browser logins, oldest first."""
    return await list_logins(ctx.store, (await _user(ctx, name)).id)


@post(
    "/api/users/{name:str}/logout",
    guards=[admins_only],
    status_code=200,
    responses=problem_responses(404),
)
async def end_user_logins(request: Request[Any, Any, Any], ctx: Context, name: str) -> LoginsEnded:
    """End every browser login of the user at once (its API tokens are left alone)."""
    user = await _user(ctx, name)
    ended = await end_logins(ctx.store, user.id)
    if ended:
        actor = platform_audit.api_actor(principal_of(request), client_address())
        await platform_audit.user_changed(
            ctx.store, actor, user.name, "logins_ended", is_admin=user.is_admin
        )
    return LoginsEnded(user=user.name, ended=ended)


ROUTES = [user_logins, end_user_logins]
