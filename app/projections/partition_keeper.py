"""Keeps the next months of ``events`` in place while projections run.

An append into a month without a partition fails (docs/scale-out.md, "Monthly partitions of
events"), so whatever runs the projections also makes the months ahead: once when it starts,
then every ``partitions_interval`` seconds. A call that finds them all made is one function
call that creates nothing; every process running projections may call it, and the database
serialises them. A failure is logged and tried again next time: a month is made weeks before
it is needed, so a missed call costs nothing.
"""

from __future__ import annotations

import asyncio
import logging

from app.projections.periodic import every
from app.store import EventStore
from app.store.partitions import ensure_partitions

log = logging.getLogger(__name__)


async def keep_partitions(
    store: EventStore, *, interval: float, months_ahead: int, stop: asyncio.Event
) -> None:
    """Until ``stop`` is set: make the missing months up to ``months_ahead`` ahead."""

    async def make() -> None:
        made = await ensure_partitions(store, months_ahead=months_ahead)
        if made:
            log.info("events: made the partitions %s", ", ".join(made))

    await every(
        interval,
        stop,
        make,
        log=log,
        failed="events: could not make the next months' partitions",
        unreachable="events: could not reach the database to make partitions",
    )
