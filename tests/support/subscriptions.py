"""Reading a live subscription in a test: the next events, or proof that none come."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from app.store import RecordedEvent


async def take(
    stream: AsyncIterator[RecordedEvent], n: int, timeout: float = 20
) -> list[RecordedEvent]:
    """The next ``n`` events of a subscription, or fail after ``timeout`` seconds."""
    got: list[RecordedEvent] = []
    async with asyncio.timeout(timeout):
        async for event in stream:
            got.append(event)
            if len(got) == n:
                break
    return got


async def nothing_more(stream: AsyncIterator[RecordedEvent], wait: float = 0.6) -> bool:
    """True when no event arrives within ``wait`` seconds: waiting out the time is the check
    itself (nothing can be awaited for an event that must not come)."""
    try:
        async with asyncio.timeout(wait):
            await anext(stream)
    except TimeoutError:
        return True
    return False
