"""Usage over a date range (``GET /api/usage``): model calls, tokens and cost by day, model and
user, with failed calls, tool failures and errors, as the analytics views count them.

The numbers are the views' (``llm_calls``, ``tool_calls``, ``errors``: docs/analytics.md) with
the views' own rules: only calls made to a model (a replay's served calls are not spend), a
cost that is NULL when no call of a group has a price, unpriced and unknown-usage calls
counted. Summed over the range, ``daily_usage`` gives the same totals per day and per model
(tests/system/analytics/test_usage_api.py holds the two to each other through ``chronicle
sql``).

Each row is joined to its session's owner (``session_owners``), which the analyst role may not
read: the application reads the views (migration 0023) in these fixed queries, narrowed to
one owner for a member. A session nobody owns (recorded by ``chronicle run`` on the host) is an
admin's to see only, under no user.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel

if TYPE_CHECKING:
    from app.store import EventStore

#: ``$1`` the range's start, ``$2`` its end (excluded), ``$3`` the owner (NULL: everyone's).
_OWNED = """
LEFT JOIN session_owners o ON o.session_id = v.session_id
WHERE v.created_at >= $1 AND v.created_at < $2 AND ($3::uuid IS NULL OR o.user_id = $3)
  AND NOT v.replayed
"""

#: The day of a row as ``daily_usage`` has it: its UTC day.
_DAY = "(v.created_at AT TIME ZONE 'UTC')::date"

#: One scan of ``llm_calls``, grouped by day, by model, by owner, and in all: ``daily_usage``'s
#: aggregates (tokens of unknown count left out of the sums).
CALLS_SQL = f"""
SELECT GROUPING({_DAY}) = 0 AS by_day, GROUPING(v.gen_ai_request_model) = 0 AS by_model,
       GROUPING(o.user_id) = 0 AS by_user,
       {_DAY} AS day, v.gen_ai_request_model AS model, o.user_id,
       (SELECT u.name FROM users u WHERE u.id = o.user_id) AS user_name,
       count(DISTINCT v.session_id) AS sessions,
       count(*) AS llm_calls,
       count(*) FILTER (WHERE v.error_message IS NOT NULL) AS failed_llm_calls,
       coalesce(sum(v.gen_ai_usage_input_tokens), 0) AS input_tokens,
       coalesce(sum(v.gen_ai_usage_output_tokens), 0) AS output_tokens,
       coalesce(sum(v.gen_ai_usage_cache_read_input_tokens), 0) AS cache_read_input_tokens,
       sum(v.cost_usd) AS cost_usd,
       count(*) FILTER (WHERE v.cost_usd IS NULL AND v.error_message IS NULL) AS unpriced_calls,
       count(*) FILTER (WHERE v.usage_unknown) AS unknown_usage_calls
FROM llm_calls v
{_OWNED}
GROUP BY GROUPING SETS (({_DAY}), (v.gen_ai_request_model), (o.user_id), ())
"""

#: Answered tool calls and those that failed (``tool_error_rate`` of docs/analytics.md), by
#: day, by tool and in all.
TOOLS_SQL = f"""
SELECT GROUPING({_DAY}) = 0 AS by_day, GROUPING(v.tool) = 0 AS by_tool,
       {_DAY} AS day, v.tool,
       count(*) AS calls, count(*) FILTER (WHERE v.failed) AS failed
FROM tool_calls v
{_OWNED}
  AND v.observation_seq IS NOT NULL
GROUP BY GROUPING SETS (({_DAY}), (v.tool), ())
"""

#: Everything that went wrong (``errors_per_day`` of docs/analytics.md), by day, by kind and
#: in all.
ERRORS_SQL = f"""
SELECT GROUPING({_DAY}) = 0 AS by_day, GROUPING(v.kind) = 0 AS by_kind,
       {_DAY} AS day, v.kind, count(*) AS errors
FROM errors v
{_OWNED}
GROUP BY GROUPING SETS (({_DAY}), (v.kind), ())
"""


class CallUsage(BaseModel):
    """Model calls of a group: ``daily_usage``'s columns, summed over the group."""

    sessions: int = 0
    llm_calls: int = 0
    failed_llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    #: Sum of the priced calls; None when none is priced (``unpriced_calls`` says how many).
    cost_usd: float | None = None
    #: Answered calls without a price: when above 0, ``cost_usd`` is a lower bound.
    unpriced_calls: int = 0
    #: Calls whose usage held a count that could not be read: the token sums are lower bounds.
    unknown_usage_calls: int = 0


class DayUsage(CallUsage):
    day: date
    tool_calls: int = 0
    failed_tool_calls: int = 0
    errors: int = 0


class ModelUsage(CallUsage):
    model: str | None


class UserUsage(CallUsage):
    #: The owner; None for sessions nobody owns (recorded on the host, e.g. ``chronicle run``).
    user: str | None


class ToolUsage(BaseModel):
    tool: str
    calls: int
    failed: int


class ErrorCount(BaseModel):
    kind: str
    errors: int


class UsageReport(BaseModel):
    """The groups of one range and owner."""

    total: CallUsage
    days: list[DayUsage]
    models: list[ModelUsage]
    users: list[UserUsage]
    tool_calls: int
    failed_tool_calls: int
    tools: list[ToolUsage]
    errors: int
    error_kinds: list[ErrorCount]


def _call_usage(row: Any) -> dict[str, Any]:
    numbers = {name: int(row[name]) for name in CallUsage.model_fields if name != "cost_usd"}
    cost = row["cost_usd"]
    return {**numbers, "cost_usd": None if cost is None else float(cost)}


async def usage_report(
    store: EventStore, start: datetime, end: datetime, owner: UUID | None
) -> UsageReport:
    """Usage of the calls made from ``start`` to ``end`` (excluded), of ``owner``'s sessions
    (None: every session)."""
    args = (start, end, owner)
    calls = await store.pool.fetch(CALLS_SQL, *args)
    tools = await store.pool.fetch(TOOLS_SQL, *args)
    errors = await store.pool.fetch(ERRORS_SQL, *args)
    days: dict[date, DayUsage] = {}
    models: list[ModelUsage] = []
    users: list[UserUsage] = []
    total = CallUsage()
    for row in calls:
        usage = _call_usage(row)
        if row["by_day"]:
            days[row["day"]] = DayUsage(day=row["day"], **usage)
        elif row["by_model"]:
            models.append(ModelUsage(model=row["model"], **usage))
        elif row["by_user"]:
            users.append(UserUsage(user=row["user_name"], **usage))
        else:
            total = CallUsage(**usage)
    tool_rows: list[ToolUsage] = []
    tool_calls = failed_tool_calls = 0
    for row in tools:
        if row["by_day"]:
            day = days.setdefault(row["day"], DayUsage(day=row["day"]))
            day.tool_calls, day.failed_tool_calls = row["calls"], row["failed"]
        elif row["by_tool"]:
            tool_rows.append(ToolUsage(tool=row["tool"], calls=row["calls"], failed=row["failed"]))
        else:
            tool_calls, failed_tool_calls = row["calls"], row["failed"]
    kinds: list[ErrorCount] = []
    error_total = 0
    for row in errors:
        if row["by_day"]:
            days.setdefault(row["day"], DayUsage(day=row["day"])).errors = row["errors"]
        elif row["by_kind"]:
            kinds.append(ErrorCount(kind=row["kind"], errors=row["errors"]))
        else:
            error_total = row["errors"]
    return UsageReport(
        total=total,
        days=[days[day] for day in sorted(days)],
        models=sorted(models, key=lambda m: (-(m.cost_usd or 0), -m.llm_calls, m.model or "")),
        users=sorted(users, key=lambda u: (-(u.cost_usd or 0), -u.llm_calls, u.user or "")),
        tool_calls=tool_calls,
        failed_tool_calls=failed_tool_calls,
        tools=sorted(tool_rows, key=lambda t: (-t.failed, -t.calls, t.tool)),
        errors=error_total,
        error_kinds=sorted(kinds, key=lambda k: (-k.errors, k.kind)),
    )
