"""One catch-up read for all of a process's session subscriptions that want one at once.

A subscription a session reads the table after each doorbell. With many sessions written at
the same time (8 writers back to back), that is a query per event per subscriber process,
each a round trip competing for the same cores as the writers, and the queue of those reads
was the delivery tail (issue 9: p99 9-13 ms where one ``subscribe_all`` over the same events
took 4-5 ms). So the reads are pooled like a group commit: the requests made in the same turn
of the event loop, and those that come while a read is on its way, go out together as one
query over several sessions' tails, whose rows are handed out by session.

Each subscription keeps its own cursor and gets exactly the events after it, so what it
delivers, and in what order, is what its own read would have given; a batch that fails is
retried a session at a time, so one session's bad row (a missing blob) fails only its own
readers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple
from uuid import UUID

from app.store.errors import DatabaseUnavailableError
from app.store.records import RecordedEvent
from app.store.transient import TRANSIENT_ERRORS

#: Read the events after each session's seq, at most ``limit`` a session, as stored or whole.
ReadTails = Callable[[Mapping[UUID, int], int, bool], Awaitable[list[RecordedEvent]]]

#: Errors that are the database's, not a session's: every reader of a batch gets them alike.
_DATABASE_AWAY: tuple[type[BaseException], ...] = (*TRANSIENT_ERRORS, DatabaseUnavailableError)


class TailPage(NamedTuple):
    """The events after a cursor, and whether they are all the session had (``complete``:
    fewer than a page came back, so the next read can wait for a doorbell)."""

    events: list[RecordedEvent]
    complete: bool


@dataclass
class _Request:
    session_id: UUID
    after_seq: int
    resolve_blobs: bool
    answer: asyncio.Future[TailPage] = field(repr=False)


class TailReads:
    """Pools session-tail reads into one query at a time (see the module's docstring)."""

    def __init__(self, read_tails: ReadTails, page_size: int) -> None:
        self._read_tails = read_tails
        self._page_size = page_size
        self._waiting: list[_Request] = []
        self._reader: asyncio.Task[None] | None = None
        self._scheduled = False

    async def read(self, session_id: UUID, after_seq: int, *, resolve_blobs: bool) -> TailPage:
        """The session's events after ``after_seq`` (a page at most), read with whatever
        other tails are wanted now. Cancelling the wait gives up only this request."""
        loop = asyncio.get_running_loop()
        request = _Request(session_id, after_seq, resolve_blobs, loop.create_future())
        self._waiting.append(request)
        if self._reader is None and not self._scheduled:
            # Not at once: the other subscriptions rung by the same notifications resume
            # in this turn of the loop, and join this read. One read at a time: measured
            # against two and four at once under 8 writers, it had the shortest tail.
            self._scheduled = True
            loop.call_soon(self._start)
        return await request.answer

    def _start(self) -> None:
        self._scheduled = False
        if self._reader is None and self._waiting:
            self._reader = asyncio.get_running_loop().create_task(self._read_while_wanted())

    async def _read_while_wanted(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                await self._answer(batch)
        finally:
            self._reader = None
            for request in self._waiting:  # only after a cancellation: nobody reads for them
                if not request.answer.done():
                    request.answer.cancel()
            self._waiting = []

    async def _answer(self, batch: list[_Request]) -> None:
        try:
            for resolve_blobs in (True, False):
                wanted = [
                    request
                    for request in batch
                    if request.resolve_blobs is resolve_blobs and not request.answer.done()
                ]
                if wanted:
                    await self._answer_alike(wanted, resolve_blobs)
        except asyncio.CancelledError:
            _fail(batch, None)
            raise

    async def _answer_alike(self, wanted: list[_Request], resolve_blobs: bool) -> None:
        """Read for requests that all want whole payloads, or all stored ones."""
        try:
            await self._read_for(wanted, resolve_blobs)
        except _DATABASE_AWAY as exc:  # the same for every session: each reader retries
            _fail(wanted, exc)
        except Exception as exc:
            sessions = {request.session_id for request in wanted}
            if len(sessions) == 1:
                _fail(wanted, exc)
                return
            for session_id in sessions:  # whose read fails? each session on its own
                alone = [request for request in wanted if request.session_id == session_id]
                try:
                    await self._read_for(alone, resolve_blobs)
                except Exception as session_exc:
                    _fail(alone, session_exc)

    async def _read_for(self, wanted: list[_Request], resolve_blobs: bool) -> None:
        cursors: dict[UUID, int] = {}
        for request in wanted:
            known = cursors.get(request.session_id)
            if known is None or request.after_seq < known:
                cursors[request.session_id] = request.after_seq
        rows = await self._read_tails(cursors, self._page_size, resolve_blobs)
        by_session: dict[UUID, list[RecordedEvent]] = {}
        for event in rows:
            by_session.setdefault(event.session_id, []).append(event)
        for request in wanted:
            events = by_session.get(request.session_id, [])
            complete = len(events) < self._page_size
            if cursors[request.session_id] != request.after_seq:  # read from an earlier cursor
                events = [event for event in events if event.seq > request.after_seq]
            if not request.answer.done():
                request.answer.set_result(TailPage(events, complete))


def _fail(requests: list[_Request], exc: BaseException | None) -> None:
    for request in requests:
        if request.answer.done():
            continue
        if exc is None:
            request.answer.cancel()
        else:
            request.answer.set_exception(exc)
