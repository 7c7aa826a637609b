"""One store subscription per watched session in this process, shared by all its clients.

Two hundred clients on twenty sessions must not mean two hundred subscriptions: each one
reads the table again on every append, so an append would cost a read per client, and every
client would encode the same event again. A ``SessionFeed`` is the one live tail of a
session here: it reads each new event once, encodes it once (``encode``, the wire format of
``streams``) and keeps the last ``window`` encoded events. Each client *follows* the feed
from its own ``after_seq``: what is older than the window (a backlog, or a client that fell
that far behind) it reads from the store page by page itself, the rest it takes from the
window; a client that keeps up costs no database read at all.

A feed starts with its first client (from the session's head then) and stops with its last.
If its subscription fails, every follower gets ``FeedFailedError`` and the next client starts
a new feed. ``close()`` (the server shutting down) wakes every follower's ``closing``.

Pure asyncio over a small ``FeedSource`` (the ``EventStore`` is one); the relay to one
client, with its bounded buffer, is ``stream_relay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from itertools import islice
from typing import Generic, Protocol, TypeVar
from uuid import UUID

from app.errors import ChronicleError
from app.store import RecordedEvent

log = logging.getLogger(__name__)

#: Encoded events a feed keeps for its followers; one further behind reads from the store.
FEED_WINDOW_EVENTS = 1000
#: Events a follower reads from the store at a time while it is behind the window.
BACKLOG_PAGE = 500


class Tail(Protocol):
    def __aiter__(self) -> AsyncIterator[RecordedEvent]: ...

    async def aclose(self) -> None: ...


class FeedSource(Protocol):
    """What a feed needs of the store."""

    async def last_seq(self, session_id: UUID) -> int: ...

    async def read(
        self, session_id: UUID, after_seq: int = 0, limit: int | None = None
    ) -> list[RecordedEvent]: ...

    def subscribe(self, session_id: UUID, after_seq: int = 0) -> Tail: ...


class Sequenced(Protocol):
    @property
    def seq(self) -> int: ...


W = TypeVar("W", bound=Sequenced)


class FeedFailedError(ChronicleError, RuntimeError):
    """The session's shared subscription failed (its cause is chained)."""


class SessionFeed(Generic[W]):
    """The live tail of one session, read and encoded once for every follower."""

    def __init__(
        self,
        source: FeedSource,
        session_id: UUID,
        encode: Callable[[RecordedEvent], W],
        window: int,
    ) -> None:
        self.session_id = session_id
        self._source = source
        self._encode = encode
        self._window: deque[W] = deque(maxlen=window)
        #: The seq just before the window's first event, and the seq of the last event read.
        self._base = 0
        self._latest = 0
        self._started = asyncio.Event()
        self._news = asyncio.Event()
        self._failure: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self.followers = 0

    @property
    def failed(self) -> bool:
        return self._failure is not None

    def start(self) -> None:
        self._task = asyncio.create_task(self._pump(), name=f"feed {self.session_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _pump(self) -> None:
        try:
            head = await self._source.last_seq(self.session_id)
            self._base = self._latest = head
            self._started.set()
            tail = self._source.subscribe(self.session_id, head)
            try:
                async for event in tail:
                    self._add(self._encode(event))
            finally:
                await tail.aclose()
        except Exception as exc:  # every follower is told; the next client starts afresh
            log.exception("the live feed of session %s failed", self.session_id)
            self._failure = exc
            self._started.set()
            self._ring()

    def _add(self, wire: W) -> None:
        if wire.seq != self._latest + 1:  # never expected: the window starts afresh here
            self._window.clear()
            self._base = wire.seq - 1
        elif len(self._window) == self._window.maxlen:
            self._base += 1
        self._window.append(wire)
        self._latest = wire.seq
        self._ring()

    def _ring(self) -> None:
        news, self._news = self._news, asyncio.Event()
        news.set()

    def _check(self) -> None:
        if self._failure is not None:
            raise FeedFailedError(
                f"the live feed of session {self.session_id} failed"
            ) from self._failure

    async def follow(self, after_seq: int) -> AsyncGenerator[W, None]:
        """Every event after ``after_seq`` once and in order: from the store while the window
        does not reach back that far, then from the window as the feed reads them."""
        await self._started.wait()
        cursor = after_seq
        while True:
            self._check()
            if cursor < self._base:
                news = self._news
                page = await self._source.read(
                    self.session_id, after_seq=cursor, limit=min(BACKLOG_PAGE, self._base - cursor)
                )
                if not page:  # nothing there yet (never expected below the head): wait
                    await news.wait()
                    continue
                for event in page:
                    yield self._encode(event)
                    cursor = event.seq
            elif cursor < self._latest:
                # a snapshot: the window moves on while this client's sends wait
                for wire in list(islice(self._window, cursor - self._base, None)):
                    yield wire
                    cursor = wire.seq
            else:
                await self._news.wait()


class StreamHub(Generic[W]):
    """The feeds of this process, one per session with followers."""

    def __init__(
        self,
        source: FeedSource,
        encode: Callable[[RecordedEvent], W],
        *,
        window: int = FEED_WINDOW_EVENTS,
    ) -> None:
        self._source = source
        self._encode = encode
        self._window = window
        self._feeds: dict[UUID, SessionFeed[W]] = {}
        #: Set when the server shuts down: every stream ends and says where to resume.
        self.closing = asyncio.Event()

    def feeds(self) -> int:
        """Sessions with a live feed (one subscription each)."""
        return len(self._feeds)

    def close(self) -> None:
        self.closing.set()

    @contextlib.asynccontextmanager
    async def following(self, session_id: UUID, after_seq: int) -> AsyncIterator[AsyncIterator[W]]:
        """The session's events after ``after_seq`` for one client, while the block runs."""
        feed = self._feeds.get(session_id)
        if feed is None or feed.failed:
            feed = SessionFeed(self._source, session_id, self._encode, self._window)
            feed.start()
            self._feeds[session_id] = feed
        feed.followers += 1
        events = feed.follow(after_seq)
        try:
            yield events
        finally:
            await events.aclose()
            feed.followers -= 1
            if feed.followers == 0:
                if self._feeds.get(session_id) is feed:
                    del self._feeds[session_id]
                await feed.stop()
