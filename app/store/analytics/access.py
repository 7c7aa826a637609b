"""Queries as the read-only analyst: which login, and one statement in a READ ONLY transaction.

``chronicle_analyst`` may SELECT the analytics views (migration 0006) and ``session_state``,
nothing else. Its queries still run in a READ ONLY transaction with a statement timeout, as a
login that must not be able to write at all: a URL that logs in as the application, the owner
or a superuser is refused rather than trusted to stay read-only. Refusals and failures become
one sentence (``AnalystError``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import asyncpg

from app.store.config import DatabaseConfig
from app.store.errors import StoreError
from app.store.transient import TRANSIENT_ERRORS
from app.store.urls import asyncpg_dsn, redact

ANALYST_ROLE = "chronicle_analyst"
DEFAULT_TIMEOUT = 30.0

# What the login can do besides reading: a member of the owner or of the application (or a
# superuser, a member of pg_write_all_data, a role that may create roles and so grant itself
# others) could change the log, so it is not an analyst's login.
WRITER_SQL = """
SELECT current_user AS login,
       r.rolsuper AS superuser,
       r.rolcreaterole AS createrole,
       coalesce(pg_has_role(current_user, to_regrole('chronicle_owner'), 'MEMBER'), false)
           AS owner,
       coalesce(pg_has_role(current_user, to_regrole('chronicle_app'), 'MEMBER'), false) AS app,
       coalesce(pg_has_role(current_user, to_regrole('pg_write_all_data'), 'MEMBER'), false)
           AS write_all
FROM pg_roles r WHERE r.rolname = current_user
"""


class AnalystError(StoreError):
    """A query as the analyst was refused or failed; the message is one sentence."""


class Column(NamedTuple):
    name: str
    #: PostgreSQL's name of its type (``int8``, ``timestamptz``, ``_text`` for text[]...).
    type: str


class QueryResult(NamedTuple):
    columns: list[Column]
    rows: list[tuple[Any, ...]]


def analyst_url(config: DatabaseConfig) -> str:
    """The configured analyst login, else the embedded server's (started and migrated)."""
    if config.analyst_database_url:
        return config.analyst_database_url
    if config.database_url:
        raise AnalystError(
            f"no analyst login is configured for the database at {redact(config.database_url)}: "
            "set CHRONICLE_ANALYST_DATABASE_URL to the URL of a login in chronicle_analyst "
            "(docs/configuration.md: Database roles)"
        )
    from app.store.database import ensure_database
    from app.store.embedded import EmbeddedPostgres

    ensure_database(config)  # started, and migrated to the views
    return EmbeddedPostgres(config.data_dir).ensure_running().analyst


def failure(exc: Exception, timeout: float) -> AnalystError:
    """One sentence for what went wrong with a query as the analyst."""
    if isinstance(exc, asyncpg.ReadOnlySQLTransactionError):
        return AnalystError(
            f"refused: queries here only read, and this one would write ({exc}); Chronicle's "
            "data changes only through its own commands"
        )
    if isinstance(exc, asyncpg.InsufficientPrivilegeError):
        return AnalystError(
            f"refused: {exc} — the analyst reads the analytics views and session_state only "
            "(docs/analytics.md lists them)"
        )
    if isinstance(exc, asyncpg.QueryCanceledError):
        return AnalystError(
            f"the query ran longer than its {timeout:g} s limit and was cancelled "
            "(--timeout gives it more)"
        )
    if isinstance(exc, asyncpg.PostgresSyntaxError) and "multiple commands" in str(exc):
        return AnalystError("give one SQL statement (no ';' between statements)")
    if isinstance(exc, asyncpg.PostgresError):
        return AnalystError(f"the query failed: {exc}")
    return AnalystError(f"cannot query as the analyst: {exc}")


async def _check_login(connection: asyncpg.Connection, url: str) -> None:
    row = await connection.fetchrow(WRITER_SQL)
    if row is None:
        return
    kinds = [
        what
        for what, flag in (
            ("a superuser", row["superuser"]),
            ("allowed to create roles", row["createrole"]),
            ("a member of chronicle_owner", row["owner"]),
            ("a member of chronicle_app", row["app"]),
            ("a member of pg_write_all_data", row["write_all"]),
        )
        if flag
    ]
    if kinds:
        raise AnalystError(
            f"{redact(url)} logs in as {row['login']}, {' and '.join(kinds)}, which can change "
            "the log; analytics need a login that is only in chronicle_analyst "
            "(docs/configuration.md: Database roles)"
        )


@asynccontextmanager
async def analyst_transaction(
    url: str, statement_timeout: float = DEFAULT_TIMEOUT
) -> AsyncIterator[asyncpg.Connection]:
    """A connection as the analyst inside a READ ONLY transaction whose statements time out
    after ``statement_timeout`` seconds; closed afterwards."""
    try:
        connection = await asyncpg.connect(asyncpg_dsn(url))
    except (*TRANSIENT_ERRORS, asyncpg.PostgresError, OSError) as exc:
        raise AnalystError(f"cannot connect as the analyst at {redact(url)}: {exc}") from None
    try:
        for name in ("json", "jsonb"):
            await connection.set_type_codec(
                name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
            )
        await _check_login(connection, url)
        async with connection.transaction(readonly=True):
            await connection.execute(
                "SELECT set_config('statement_timeout', $1, true)",
                f"{int(statement_timeout * 1000)}ms",
            )
            yield connection
    finally:
        await connection.close()


def columns_of(statement: asyncpg.prepared_stmt.PreparedStatement) -> list[Column]:
    return [Column(a.name, a.type.name) for a in statement.get_attributes()]


async def run_query(
    url: str, sql: str, args: Sequence[Any] = (), *, statement_timeout: float = DEFAULT_TIMEOUT
) -> QueryResult:
    """One statement as the analyst: its columns and all its rows."""
    try:
        async with analyst_transaction(url, statement_timeout) as connection:
            statement = await connection.prepare(sql)
            rows = await statement.fetch(*args)
            return QueryResult(columns_of(statement), [tuple(row) for row in rows])
    except asyncpg.PostgresError as exc:
        raise failure(exc, statement_timeout) from None


async def stream_query(
    url: str,
    sql: str,
    args: Sequence[Any] = (),
    *,
    statement_timeout: float = DEFAULT_TIMEOUT,
    batch: int = 5000,
) -> AsyncIterator[tuple[list[Column], list[tuple[Any, ...]]]]:
    """One statement as the analyst, its rows in batches (with the columns each time): for
    writing a view to a file without holding it in memory. A statement with no rows yields
    one empty batch, so the caller still learns the columns."""
    try:
        async with analyst_transaction(url, statement_timeout) as connection:
            statement = await connection.prepare(sql)
            columns = columns_of(statement)
            rows: list[tuple[Any, ...]] = []
            sent = False
            async for row in statement.cursor(*args, prefetch=batch):
                rows.append(tuple(row))
                if len(rows) >= batch:
                    yield columns, rows
                    rows, sent = [], True
            if rows or not sent:
                yield columns, rows
    except asyncpg.PostgresError as exc:
        raise failure(exc, statement_timeout) from None
