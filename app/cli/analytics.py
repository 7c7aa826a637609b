"""`chronicle sql` and `chronicle export --view`: the analytics views as the read-only analyst.

Both run as ``chronicle_analyst`` (CHRONICLE_ANALYST_DATABASE_URL, or the embedded server's
analyst login), never as the application: a query cannot change the log, and a login that
could is refused (app/store/analytics/access.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from app.config import Settings
from app.store.analytics import (
    VIEWS,
    AnalystError,
    Column,
    NoTimeColumnError,
    aligned_table,
    analyst_url,
    json_value,
    run_query,
    stream_query,
    view_query,
    write_csv,
    write_parquet,
)
from app.store.archive import query_archive

FORMATS = ("csv", "parquet")


def since_date(text: str) -> datetime:
    """``--since``: an ISO date (a UTC day) or time (UTC unless it has an offset)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date or time (2026-12-01, 2026-12-01T14:30, 2026-12-01T14:30+02:00)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value:g} is not more than 0 seconds")
    return value


def add_parsers(commands: argparse._SubParsersAction) -> None:
    sql_parser = commands.add_parser(
        "sql",
        help="run one read-only SQL query over the analytics views (docs/analytics.md)",
        description="Run one SQL statement as the read-only chronicle_analyst, in a READ ONLY "
        "transaction. It sees the views llm_calls, tool_calls, errors, agent_states, "
        "session_costs, daily_usage and the table session_state.",
    )
    sql_parser.add_argument("query", nargs="?", metavar="SQL", help="one SQL statement")
    out = sql_parser.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="CSV with a header line")
    out.add_argument("--json", action="store_true", help="one JSON object per row")
    out.add_argument(
        "--url",
        action="store_true",
        help="print the analyst's connection URL (with its password) for psql or a BI tool",
    )
    sql_parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="cancel the query after SECONDS (default 30)",
    )
    sql_parser.add_argument(
        "--archive",
        type=Path,
        metavar="DIR",
        help="query a `chronicle archive` directory in place instead (DuckDB over its Parquet: "
        "the tables events, sessions, llm_messages and session_state; no database needed)",
    )
    sql_parser.set_defaults(handler=sql)


def add_view_arguments(export: argparse.ArgumentParser) -> None:
    """`chronicle export --view NAME ...` (the parser itself is app/cli/archive.py's)."""
    export.add_argument(
        "--view",
        choices=sorted(VIEWS),
        metavar="NAME",
        help=f"write an analytics view instead of sessions: {', '.join(sorted(VIEWS))}",
    )
    export.add_argument(
        "--since",
        type=since_date,
        metavar="DATE",
        help="with --view: only rows from DATE on (a UTC date or time)",
    )
    export.add_argument(
        "--format",
        choices=(*FORMATS, "atif"),
        default=None,
        help="with --view: csv (default) or parquet (needs pyarrow: chronicle[analytics]); "
        "with one SESSION: atif (an ATIF trajectory, docs/atif.md)",
    )


async def _analyst_url(settings: Settings) -> str:
    """The analyst's URL, after the projections (session_state) are brought up to date when
    no runner keeps them current: a query right after `chronicle run` sees the run."""
    from app.cli.log import open_store
    from app.projections import all_projections, bring_up_to_date

    url = await asyncio.to_thread(analyst_url, settings.database_config())
    async with await open_store(settings) as store:
        for projection in all_projections():
            await bring_up_to_date(store, projection, settings.projections)
    return url


async def sql(args: argparse.Namespace, settings: Settings) -> int:
    if args.archive is not None:
        return await sql_archive(args)
    if args.url:
        if args.query:
            print("error: --url prints the URL only; give no SQL with it", file=sys.stderr)
            return 2
        print(await asyncio.to_thread(analyst_url, settings.database_config()))
        return 0
    if not args.query or not args.query.strip():
        print("error: give one SQL statement, e.g. chronicle sql 'SELECT 1'", file=sys.stderr)
        return 2
    url = await _analyst_url(settings)
    if args.csv:
        await write_csv(sys.stdout, stream_query(url, args.query, statement_timeout=args.timeout))
        return 0
    if args.json:
        async for columns, rows in stream_query(url, args.query, statement_timeout=args.timeout):
            names = [column.name for column in columns]
            for row in rows:
                record = {name: json_value(value) for name, value in zip(names, row, strict=True)}
                print(json.dumps(record, ensure_ascii=False))
        return 0
    result = await run_query(url, args.query, statement_timeout=args.timeout)
    print(aligned_table(result.columns, result.rows))
    return 0


async def sql_archive(args: argparse.Namespace) -> int:
    """`chronicle sql --archive DIR SQL`: DuckDB over the archive's Parquet, printed as
    `chronicle sql` prints (aligned, --csv or --json)."""
    if args.url:
        print("error: --url names the database's analyst; an archive has none", file=sys.stderr)
        return 2
    if not args.query or not args.query.strip():
        print(
            "error: give one SQL statement, e.g. chronicle sql --archive DIR "
            "'SELECT count(*) FROM events'",
            file=sys.stderr,
        )
        return 2
    if not args.archive.is_dir():
        print(f"error: {args.archive} is not an archive directory", file=sys.stderr)
        return 2
    result = await asyncio.to_thread(query_archive, args.archive, args.query, timeout=args.timeout)
    if args.csv:
        await write_csv(sys.stdout, _one_batch(result.columns, result.rows))
    elif args.json:
        names = [column.name for column in result.columns]
        for row in result.rows:
            record = {name: json_value(value) for name, value in zip(names, row, strict=True)}
            print(json.dumps(record, ensure_ascii=False))
    else:
        print(aligned_table(result.columns, result.rows))
    return 0


async def _one_batch(
    columns: list[Column], rows: list[tuple[Any, ...]]
) -> AsyncIterator[tuple[list[Column], list[tuple[Any, ...]]]]:
    yield columns, rows


async def export_view(args: argparse.Namespace, settings: Settings) -> int:
    """Write the view ``args.view`` to ``args.output`` as CSV or Parquet."""
    since: date | None = args.since
    try:
        query, parameters = view_query(args.view, since)
    except NoTimeColumnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    fmt = args.format or "csv"
    if fmt == "parquet" and args.output is None:
        print("error: Parquet goes to a file: give -o FILE", file=sys.stderr)
        return 2
    url = await _analyst_url(settings)
    batches = stream_query(url, query, parameters, statement_timeout=args.timeout)
    if fmt == "parquet":
        written = await write_parquet(args.output, batches)
    elif args.output is None:
        written = await write_csv(sys.stdout, batches)
    else:
        with _fresh(args.output).open("w", encoding="utf-8", newline="") as out:
            written = await write_csv(out, batches)
    where = f" to {args.output}" if args.output else ""
    print(f"{written} rows of {args.view}{where}", file=sys.stderr)
    return 0


def _fresh(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


__all__ = ["AnalystError", "add_parsers", "add_view_arguments", "export_view", "sql"]
