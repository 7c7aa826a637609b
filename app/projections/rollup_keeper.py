"""Keeps the usage rollups short of the head of the log while projections run.

``daily_usage`` and ``session_costs`` add the calls committed since the rollups' last
refresh as they are (app/store/analytics/rollups.py), so they are right whether this runs or
not; it only keeps what they add small, and so the views fast. Every process running
projections may call it: the database runs one refresh at a time. A failure is logged and
tried again next time (the views stay right meanwhile, only slower).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from app.store import TRANSIENT_ERRORS, EventStore, StoreError
from app.store.analytics import refresh_usage_rollups

log = logging.getLogger(__name__)


async def keep_rollups(store: EventStore, *, interval: float, stop: asyncio.Event) -> None:
    """Until ``stop`` is set: refresh the usage rollups every ``interval`` seconds."""
    while not stop.is_set():
        try:
            done = await refresh_usage_rollups(store)
            if done.counted:
                log.debug("usage rollups: counted %d model calls", done.counted)
        except StoreError as exc:
            log.warning("usage rollups: could not refresh: %s", exc)
        except TRANSIENT_ERRORS as exc:  # the database went away: the next round tries again
            log.warning("usage rollups: could not reach the database: %s", exc)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(interval):
                await stop.wait()
