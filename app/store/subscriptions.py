"""Live tails over the log: one session by ``seq``, all sessions by ``(tx, global_position)``.

Each subscription keeps its own cursor and reads the table to catch up: at start, after every
doorbell from the notifier, after reconnects, and on a slow poll. It therefore delivers every
event once and in order even when notifications are lost or the database restarts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING
from uuid import UUID

from app.store.records import Position, RecordedEvent
from app.store.transient import TRANSIENT_ERRORS

if TYPE_CHECKING:
    from app.store.event_store import EventStore

log = logging.getLogger(__name__)

PAGE_SIZE = 1000
#: A durable subscription saves its checkpoint at least this often while busy.
CHECKPOINT_EVERY_EVENTS = 500
CHECKPOINT_EVERY_SECONDS = 1.0


async def _read_until_available(
    read: Callable[[], Awaitable[list[RecordedEvent]]], poll_interval: float
) -> list[RecordedEvent]:
    """Keep trying a catch-up read through connection loss and server restarts."""
    backoff = 0.05
    while True:
        try:
            return await read()
        except TRANSIENT_ERRORS as exc:
            log.warning("subscription read failed (%s); retrying", exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, poll_interval)


async def subscribe_session(
    store: EventStore, session_id: UUID, after_seq: int
) -> AsyncIterator[RecordedEvent]:
    key = str(session_id)
    wakeup = store.notifier.watch(key)
    cursor = after_seq
    try:
        while True:
            wakeup.clear()
            batch = await _read_until_available(
                lambda: store.read(session_id, after_seq=cursor, limit=PAGE_SIZE),
                store.settings.poll_interval,
            )
            for event in batch:
                cursor = event.seq
                yield event
            if len(batch) == PAGE_SIZE:
                continue
            while True:
                rang = await wakeup.wait(store.settings.poll_interval)
                # A doorbell that only repeats what we already have needs no read.
                if not rang or wakeup.must_read or wakeup.latest_seq > cursor:
                    break
                wakeup.clear()
    finally:
        store.notifier.unwatch(key, wakeup)


async def subscribe_all(
    store: EventStore, name: str | None, start: Position | None, auto_checkpoint: bool
) -> AsyncIterator[RecordedEvent]:
    """Every session's events in commit-safe order.

    With a ``name``, the position of the events the consumer has finished with (it asked for
    the next one) is saved under that name, so a restart resumes after them: delivery is
    at-least-once across crashes. Consumers that write state of their own should save the
    checkpoint in their own transaction (``EventStore.save_checkpoint``) for exactly-once.
    """
    if start is None and name is not None:
        start = await store.load_checkpoint(name)
    position = start or Position.origin()
    saved = position
    saved_at = time.monotonic()
    wakeup = store.notifier.watch(None)

    unsaved = 0

    async def save(done: Position) -> None:
        nonlocal saved, saved_at, unsaved
        if name is None or not auto_checkpoint or done == saved:
            return
        try:
            await store.save_checkpoint(name, done)
        except TRANSIENT_ERRORS as exc:  # saved again later; worst case a redelivery
            log.warning("could not save checkpoint %r: %s", name, exc)
            return
        saved, saved_at, unsaved = done, time.monotonic(), 0

    done = position
    try:
        while True:
            wakeup.clear()
            batch = await _read_until_available(
                lambda: store.read_all(after=position, limit=PAGE_SIZE),
                store.settings.poll_interval,
            )
            for event in batch:
                position = event.position
                yield event
                done = position
                unsaved += 1
                if (
                    unsaved >= CHECKPOINT_EVERY_EVENTS
                    or time.monotonic() - saved_at > CHECKPOINT_EVERY_SECONDS
                ):
                    await save(done)
            await save(done)
            if len(batch) < PAGE_SIZE:
                await wakeup.wait(store.settings.poll_interval)
    finally:
        store.notifier.unwatch(None, wakeup)
        await save(done)
