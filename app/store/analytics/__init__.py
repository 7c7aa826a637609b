"""SQL analytics as the read-only analyst: its login, its queries, the views, their files."""

from app.store.analytics.access import (
    ANALYST_ROLE,
    AnalystError,
    Column,
    QueryResult,
    analyst_url,
    run_query,
    stream_query,
)
from app.store.analytics.tabular import MissingExtraError
from app.store.analytics.views import VIEWS, NoTimeColumnError, UnknownViewError, view_query

__all__ = [
    "ANALYST_ROLE",
    "VIEWS",
    "AnalystError",
    "Column",
    "MissingExtraError",
    "NoTimeColumnError",
    "QueryResult",
    "UnknownViewError",
    "analyst_url",
    "run_query",
    "stream_query",
    "view_query",
]
