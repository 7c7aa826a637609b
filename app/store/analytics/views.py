"""The analytics views by name, and the query that writes one to a file.

The names are fixed here (never taken from the command line as SQL): each view with its time
column (for ``--since``) and the order its rows are written in, so two exports of the same
data are the same file.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import NamedTuple

from app.errors import ChronicleError


class View(NamedTuple):
    #: The column ``--since`` compares with (a ``date`` for ``daily_usage``).
    time_column: str
    order_by: str


VIEWS: dict[str, View] = {
    "llm_calls": View("created_at", "created_at, session_id, seq"),
    "tool_calls": View("created_at", "created_at, session_id, seq"),
    "errors": View("created_at", "created_at, session_id, seq"),
    "agent_states": View("created_at", "created_at, session_id, seq"),
    "session_costs": View("created_at", "created_at, session_id"),
    "daily_usage": View("day", "day, gen_ai_request_model"),
    # The session_state projection's table (its migration grants the analyst SELECT).
    "session_state": View("created_at", "created_at, session_id"),
    # The platform's own audit trail (migration 0016): tokens, logins, users, admins' reads.
    "platform_audit": View("created_at", "created_at, seq"),
}


class UnknownViewError(ChronicleError, ValueError):
    pass


def view_query(name: str, since: date | None = None) -> tuple[str, list[object]]:
    """``SELECT`` of the whole view (rows from ``since`` on, a UTC date or time), in order."""
    view = VIEWS.get(name)
    if view is None:
        raise UnknownViewError(f"no view {name!r}; the views are {', '.join(sorted(VIEWS))}")
    if since is None:
        return f"SELECT * FROM {name} ORDER BY {view.order_by}", []
    if view.time_column == "day":
        bound: object = since.date() if isinstance(since, datetime) else since
    elif isinstance(since, datetime):
        bound = since if since.tzinfo else since.replace(tzinfo=UTC)
    else:
        bound = datetime(since.year, since.month, since.day, tzinfo=UTC)
    sql = f"SELECT * FROM {name} WHERE {view.time_column} >= $1 ORDER BY {view.order_by}"
    return sql, [bound]
