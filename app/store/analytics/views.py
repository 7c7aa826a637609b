"""The analytics views by name, and the query that writes one to a file.

The names are fixed here (never taken from the command line as SQL): each view with its time
column (for ``--since``; None for a view of whole evaluation runs, which has none) and the
order its rows are written in, so two exports of the same data are the same file. Every view
of ``migrations/sql/views/`` is here but the internal ones (a test holds the lists equal).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import NamedTuple

from app.errors import ChronicleError


class View(NamedTuple):
    #: The column ``--since`` compares with (a ``date`` for ``daily_usage``); None: no such.
    time_column: str | None
    order_by: str


#: Views of ``migrations/sql/views/`` no analyst reads: the parts other views are built from.
#: ``usage_calls`` is ``llm_calls`` with each call's place in the log, for the usage rollups
#: (migration 0028).
INTERNAL_VIEWS = frozenset({"usage_calls"})

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
    # People's labels on sessions and events (migration 0025).
    "annotations": View("created_at", "created_at, session_id, seq"),
    # An evaluation run's report, one view per section (docs/analytics.md, "Evaluation runs").
    "evaluation_sessions": View("created_at", "created_at, session_id"),
    "evaluation_tasks": View(None, "evaluation_run, task_id"),
    "evaluation_summary": View("started_at", "started_at, evaluation_run"),
    "evaluation_endings": View(None, "evaluation_run, ending"),
    "evaluation_usage": View(None, "evaluation_run"),
    "evaluation_latency": View(None, "evaluation_run"),
    "evaluation_tool_errors": View(None, "evaluation_run"),
    "evaluation_replays": View(None, "evaluation_run, task_id, epoch, session_id"),
}


class UnknownViewError(ChronicleError, ValueError):
    pass


class NoTimeColumnError(UnknownViewError):
    """``--since`` asked of a view without a time column (a view of whole runs)."""


def view_query(name: str, since: date | None = None) -> tuple[str, list[object]]:
    """``SELECT`` of the whole view (rows from ``since`` on, a UTC date or time), in order."""
    view = VIEWS.get(name)
    if view is None:
        raise UnknownViewError(f"no view {name!r}; the views are {', '.join(sorted(VIEWS))}")
    if since is None:
        return f"SELECT * FROM {name} ORDER BY {view.order_by}", []
    if view.time_column is None:
        raise NoTimeColumnError(f"{name} has no time column: export it without --since")
    if view.time_column == "day":
        bound: object = since.date() if isinstance(since, datetime) else since
    elif isinstance(since, datetime):
        bound = since if since.tzinfo else since.replace(tzinfo=UTC)
    else:
        bound = datetime(since.year, since.month, since.day, tzinfo=UTC)
    sql = f"SELECT * FROM {name} WHERE {view.time_column} >= $1 ORDER BY {view.order_by}"
    return sql, [bound]
