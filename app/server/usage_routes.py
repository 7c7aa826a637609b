"""Usage over the API: ``GET /api/usage?from=DATE&to=DATE[&user=NAME]``.

Tokens, cost and model calls by day, model and user, with failed calls, tool failures and
errors, between two UTC days (both included; the last 30 days by default), as the analytics
views count them (app/sessions/sql/usage.py). A member reads their own sessions' usage only
(naming another user is refused with 403); an admin reads everyone's, or one user's with
``user=``, and the sessions nobody owns (recorded on the host) count under no user.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any

from litestar import Request, get
from litestar.exceptions import PermissionDeniedException
from litestar.params import QueryParameter
from pydantic import BaseModel

from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import NotFound, Unprocessable, problem_responses
from app.sessions.sql.usage import UsageReport, usage_report
from app.sessions.sql.users import find_user, list_users

#: The range a request leaves out: the last 30 days, today (UTC) included.
DEFAULT_DAYS = 30
#: The longest range one request may ask for (ten years of days).
MAX_DAYS = 3660


class Usage(UsageReport):
    """The usage of ``user`` (None: everyone the caller may see) over the UTC days from
    ``first_day`` to ``last_day``, both included."""

    first_day: date
    last_day: date
    user: str | None
    #: Whom an admin may pick (every user not removed); a member: themselves.
    users_to_pick: list[str]


class UsageQuery(BaseModel):
    start: date
    end: date


def usage_range(start: date | None, end: date | None, today: date) -> UsageQuery:
    """The days asked for: ``to`` defaults to today (UTC), ``from`` to 29 days before ``to``."""
    last = end or today
    first = start or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        raise Unprocessable(f"from ({first}) is after to ({last}); swap them")
    if (last - first).days >= MAX_DAYS:
        raise Unprocessable(f"ask for at most {MAX_DAYS} days at once")
    return UsageQuery(start=first, end=last)


@get("/api/usage", responses=problem_responses(404, 422))
async def usage(
    request: Request[Any, Any, Any],
    ctx: Context,
    start: Annotated[
        date | None, QueryParameter(query="from", description="first UTC day (YYYY-MM-DD)")
    ] = None,
    end: Annotated[
        date | None, QueryParameter(query="to", description="last UTC day, included")
    ] = None,
    user: Annotated[
        str | None, QueryParameter(max_length=64, description="one user's usage (admins)")
    ] = None,
) -> Usage:
    """Tokens, cost and calls by day, model and user, with errors and tool failures."""
    principal = principal_of(request)
    days = usage_range(start, end, datetime.now(UTC).date())
    if principal.is_admin:
        owner = None
        if user is not None:
            found = None if "\x00" in user else await find_user(ctx.store, user)
            if found is None:
                raise NotFound(f"no user {user!r}")
            owner = found.id
        people = [u.name for u in await list_users(ctx.store) if u.removed_at is None]
    else:
        if user is not None and user != principal.name:
            raise PermissionDeniedException("another user's usage is for admins only")
        owner, people = principal.user_id, [principal.name]
    end = (
        datetime.combine(days.end + timedelta(days=1), time(), UTC)
        if days.end < date.max
        else datetime.max.replace(tzinfo=UTC)
    )
    report = await usage_report(ctx.store, datetime.combine(days.start, time(), UTC), end, owner)
    return Usage(
        **report.model_dump(),
        first_day=days.start,
        last_day=days.end,
        user=user if principal.is_admin else principal.name,
        users_to_pick=people,
    )


ROUTES = [usage]
