"""`chronicle db scrub [--full]`: removed content out of the database's own files, after a
redaction or an erasure (app/store/scrub.py says what each does and what it cannot reach)."""

from __future__ import annotations

import argparse
import sys

from app.config import Settings


def add_parser(sub: argparse._SubParsersAction) -> None:
    scrub = sub.add_parser(
        "scrub",
        help="after a redaction or an erasure: vacuum the tables and rebuild the text indexes "
        "(--full: rewrite the tables, so nothing removed is left in their files)",
    )
    scrub.add_argument(
        "--full",
        action="store_true",
        help="VACUUM FULL: each table rewritten under an exclusive lock (appends wait)",
    )


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.store import admin_database_url, scrub_tables

    url = admin_database_url(settings.database_config())
    report = await scrub_tables(
        url, full=args.full, progress=lambda text: print(f"scrub: {text}", file=sys.stderr)
    )
    how = "rewritten" if report.full else "vacuumed"
    print(f"{how}: {', '.join(report.tables)}")
    if report.reindexed:
        print(f"indexes rebuilt: {', '.join(report.reindexed)}")
    if not report.full:
        print(
            "free space in the tables' files may still hold removed bytes until it is reused: "
            "`chronicle db scrub --full` rewrites them",
            file=sys.stderr,
        )
    return 0
