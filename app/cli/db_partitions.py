"""`chronicle db partitions [ensure|list]`: the monthly partitions of ``events``.

``ensure`` makes the missing months up to ``--ahead`` months after the current one (what the
projection runner does every hour while it runs), so a deployment whose projections run
elsewhere, or not at all, can do it from cron; ``list`` shows each month, its bounds and
whether it is attached. Dropping a month is ``chronicle archive``'s, after it has written and
verified the archive (``app.store.partitions.detach_partition``).
"""

from __future__ import annotations

import argparse
from datetime import date

from app.config import Settings
from app.store.partitions import MONTHS_AHEAD, connected, ensure_partitions, list_partitions

ACTIONS = ("list", "ensure")


def add_parser(sub: argparse._SubParsersAction) -> None:
    partitions = sub.add_parser(
        "partitions",
        help="the monthly partitions of the events table: list them, make the next months",
        description="list (the default) shows each month of events and whether it is "
        "attached; ensure makes every missing month up to --ahead months after this one "
        "(the projection runner does it while it runs; an append into a month without a "
        "partition fails).",
    )
    partitions.add_argument("action", nargs="?", choices=ACTIONS, default="list")
    partitions.add_argument(
        "--ahead",
        type=int,
        default=MONTHS_AHEAD,
        help=f"months after the current one to make (default: {MONTHS_AHEAD})",
    )
    partitions.add_argument(
        "--since",
        type=date.fromisoformat,
        help="make the months from this date's on too (YYYY-MM-DD), e.g. to bring back an "
        "archive of an old month with `chronicle import`",
    )


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.store import admin_database_url

    url = admin_database_url(settings.database_config())
    async with connected(url) as connection:
        if args.action == "ensure":
            made = await ensure_partitions(connection, months_ahead=args.ahead, since=args.since)
            print(f"made {', '.join(made)}" if made else "every month is in place")
            return 0
        partitions = await list_partitions(connection)
    if not partitions:
        print("events has no partitions: run `chronicle db partitions ensure`")
        return 1
    print(f"{'partition':<16} {'from (UTC)':<12} {'to (UTC)':<12} attached")
    for partition in partitions:
        print(
            f"{partition.name:<16} {partition.start.date().isoformat():<12} "
            f"{partition.end.date().isoformat():<12} {'yes' if partition.attached else 'no'}"
        )
    return 0
