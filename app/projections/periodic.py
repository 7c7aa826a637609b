"""What runs beside the projection runners now and then (the next months' partitions, the
usage rollups): a step every ``interval`` seconds until stopped, whose failure is logged and
tried again next time, since each such step is upkeep that a later one makes good."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from app.store import TRANSIENT_ERRORS, StoreError


async def every(
    interval: float,
    stop: asyncio.Event,
    step: Callable[[], Awaitable[None]],
    *,
    log: logging.Logger,
    failed: str,
    unreachable: str,
) -> None:
    """Until ``stop`` is set: ``step()``, then wait ``interval`` seconds (or for ``stop``).
    A ``StoreError`` is logged after ``failed``; the database gone, after ``unreachable``."""
    while not stop.is_set():
        try:
            await step()
        except StoreError as exc:
            log.warning("%s: %s", failed, exc)
        except TRANSIENT_ERRORS as exc:  # the database went away: the next round tries again
            log.warning("%s: %s", unreachable, exc)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(interval):
                await stop.wait()
