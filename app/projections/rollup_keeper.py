"""Keeps the usage rollups short of the head of the log while projections run.

``daily_usage`` and ``session_costs`` add the calls committed since the rollups' last
refresh as they are (app/store/analytics/rollups.py), so they are right whether this runs or
not; it only keeps what they add small, and so the views fast. Every process running
projections may call it: the database runs one refresh at a time. A failure is logged and
tried again next time (the views stay right meanwhile, only slower).
"""

from __future__ import annotations

import asyncio
import logging

from app.projections.periodic import every
from app.store import EventStore
from app.store.analytics import refresh_usage_rollups

log = logging.getLogger(__name__)


async def keep_rollups(store: EventStore, *, interval: float, stop: asyncio.Event) -> None:
    """Until ``stop`` is set: refresh the usage rollups every ``interval`` seconds."""

    async def refresh() -> None:
        done = await refresh_usage_rollups(store)
        if done.counted:
            log.debug("usage rollups: counted %d model calls", done.counted)

    await every(
        interval,
        stop,
        refresh,
        log=log,
        failed="usage rollups: could not refresh",
        unreachable="usage rollups: could not reach the database",
    )
