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
from app.store.analytics.rollups import RollupError, RollupRefresh, refresh_usage_rollups
from app.store.analytics.tabular import (
    MissingExtraError,
    aligned_table,
    json_value,
    text_value,
    write_csv,
    write_parquet,
)
from app.store.analytics.views import (
    INTERNAL_VIEWS,
    VIEWS,
    NoTimeColumnError,
    UnknownViewError,
    view_query,
)

__all__ = [
    "ANALYST_ROLE",
    "INTERNAL_VIEWS",
    "VIEWS",
    "AnalystError",
    "Column",
    "MissingExtraError",
    "NoTimeColumnError",
    "QueryResult",
    "RollupError",
    "RollupRefresh",
    "UnknownViewError",
    "aligned_table",
    "analyst_url",
    "json_value",
    "refresh_usage_rollups",
    "run_query",
    "stream_query",
    "text_value",
    "view_query",
    "write_csv",
    "write_parquet",
]
