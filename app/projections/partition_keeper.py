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
import contextlib
import logging

from app.store import EventStore, StoreError
from app.store.partitions import ensure_partitions

log = logging.getLogger(__name__)


async def keep_partitions(
    store: EventStore, *, interval: float, months_ahead: int, stop: asyncio.Event
) -> None:
    """Until ``stop`` is set: make the missing months up to ``months_ahead`` ahead."""
    while not stop.is_set():
        try:
            made = await ensure_partitions(store, months_ahead=months_ahead)
            if made:
                log.info("events: made the partitions %s", ", ".join(made))
        except StoreError as exc:
            log.warning("events: could not make the next months' partitions: %s", exc)
        except OSError as exc:  # the database went away: the next round tries again
            log.warning("events: could not reach the database to make partitions: %s", exc)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(interval):
                await stop.wait()
