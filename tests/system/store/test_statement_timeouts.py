"""A BI tool's runaway query as the analyst is cancelled: the embedded server's
chronicle_analyst login (what `chronicle sql --url` hands a BI tool) starts every session with
a statement timeout (migration 0017: 60 s), which the operator may change per role.

Before, the analyst had none: `SELECT pg_sleep(...)`, or a cross join of events, ran for ever.
Each test runs a server of its own (the roles' defaults are the cluster's)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from app.store.config import DatabaseConfig
from app.store.database import ensure_database
from app.store.embedded import EmbeddedPostgres

pytestmark = pytest.mark.slow


def test_a_bi_tools_runaway_query_as_the_analyst_is_cancelled(data_dir: Path) -> None:
    server = EmbeddedPostgres(data_dir)
    try:
        ensure_database(DatabaseConfig(data_dir=data_dir))  # started and migrated
        urls = server.ensure_running()
        with psycopg.connect(urls.analyst) as bi, psycopg.connect(urls.app) as app:
            assert bi.execute("SHOW statement_timeout").fetchone() == ("1min",)
            assert app.execute("SHOW statement_timeout").fetchone() == ("5min",)
        # A small limit for the test, set as docs/analytics.md tells an operator to.
        with psycopg.connect(urls.admin, autocommit=True) as admin:
            admin.execute("ALTER ROLE chronicle_analyst SET statement_timeout = '1s'")
        with psycopg.connect(urls.analyst) as bi:
            with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
                bi.execute("SELECT pg_sleep(5)")
    finally:
        server.stop()
