"""Sessions of thousands of events written straight into a test server's database, for the
web page's tests of long sessions (the API would take minutes to record them)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from app.events import Event
from app.events.masking import SecretMasker
from app.store import EventStore


async def append(database_url: str, session: uuid.UUID, events: list[Event], after: int) -> None:
    async with await EventStore.open(database_url, masker=SecretMasker({})) as store:
        for start in range(0, len(events), 1000):
            batch = events[start : start + 1000]
            await store.append(session, batch, expected_seq=after + start)


def run_async(work: Coroutine[Any, Any, None]) -> None:
    # in a thread of its own: Playwright's sync API keeps an event loop running in this one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, work).result()
