"""Applying the log up to its head: a runner's start, a rebuild, a read that catches up.

The next page of events is read (on a pool connection) while the last one is applied (on the
runner's own), so a backlog costs about the slower of the two, not their sum.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Self

from app.projections.base import Projection
from app.projections.sql.projection_store import ProjectionConnection
from app.store import EventStore, Position, RecordedEvent

#: Called with each batch once it is committed.
Applied = Callable[[Sequence[RecordedEvent]], None]


class ReadAhead:
    """The log after a position, page by page up to the head, one page read ahead."""

    def __init__(self, store: EventStore, after: Position, size: int) -> None:
        self._store = store
        self._size = size
        self._pending: asyncio.Task[list[RecordedEvent]] | None = self._read(after)

    def _read(self, after: Position) -> asyncio.Task[list[RecordedEvent]]:
        return asyncio.ensure_future(self._store.read_all(after=after, limit=self._size))

    async def next(self) -> list[RecordedEvent]:
        """The next page; empty once the head is reached."""
        if self._pending is None:
            return []
        page = await self._pending
        self._pending = self._read(page[-1].position) if len(page) == self._size else None
        return page

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(BaseException):
                await self._pending


async def catch_up(
    store: EventStore,
    connection: ProjectionConnection,
    projection: Projection,
    position: Position,
    *,
    batch_size: int,
    applied: Applied | None = None,
) -> Position:
    """Apply every event after ``position`` up to the head to the projection's tables, each
    batch with its position; the position reached."""
    while True:
        async with ReadAhead(store, position, batch_size) as pages:
            while page := await pages.next():
                position = await connection.apply(projection, page, position)
                if applied is not None:
                    applied(page)
        # The head moved while we applied: what was appended meanwhile is read now.
        if not await connection.anything_after(position):
            return position


async def rebuild(
    store: EventStore,
    connection: ProjectionConnection,
    projection: Projection,
    *,
    batch_size: int,
    progress: Callable[[int], None] | None = None,
) -> Position:
    """Build the projection's tables afresh from the start of the log into temporary tables,
    then swap them in with their position in one transaction; the position swapped in.

    Needs no lock: the swap locks the projection's checkpoint, so a runner applying elsewhere
    finds its position moved and carries on from the swapped one.
    """
    await connection.register(projection.name, projection.version)
    await connection.start_building(projection)
    position = Position.origin()
    last_event_at: datetime | None = None
    done = 0
    async with ReadAhead(store, position, batch_size) as pages:
        while page := await pages.next():
            await connection.build(projection, page)
            position, last_event_at = page[-1].position, page[-1].created_at
            done += len(page)
            if progress is not None:
                progress(done)
    await connection.swap_in(projection, position, last_event_at)
    return position
