"""One listening connection per process, fanned out to in-process subscribers.

A notification is only a doorbell: it says "session S reached seq N" and carries no data.
Subscribers catch up by reading the table after every ring, after every reconnect (when
notifications may have been lost) and on a slow poll, so a lost ring delays but never loses
an event.

The connection LISTENs only while something in the process watches: a listener hears every
append of the cluster, its process's own included, and taking each one in costs the client
~75-100 us of CPU (asyncpg's parsing, an event-loop wake-up), which a process that only writes
paid on every append for nothing (issue 9's fifth pass; its figures are in the git history of
README.md). When the first watcher comes, LISTEN is sent and then every watcher rung, so
whatever committed before the LISTEN took effect is found by the catch-up read that ring
causes.

A NOTIFY sent by one of the process's own append connections rings nobody: the append rings
its watchers itself, with the events, once it returns (``EventStore.append``). Heard first,
that NOTIFY rang a subscriber with a seq and no events, so it read the table for what the
append was about to hand it, a round trip racing the append (issue 9's seventh pass: 0.4-1
such reads a controller step).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Container, Sequence

import asyncpg

from app.store.records import RecordedEvent
from app.store.transient import TRANSIENT_ERRORS

CHANNEL = "chronicle_events"
NOTIFY_SQL = f"SELECT pg_notify('{CHANNEL}', payload) FROM unnest($1::text[]) AS payload"

log = logging.getLogger(__name__)


#: Events this process appended are handed to its own subscribers (no read needed); a
#: subscriber that falls further behind than this reads the table instead.
MAX_OFFERED = 1000


class Wakeup:
    """A subscriber's doorbell: remembers the highest seq announced and whether to re-read,
    and holds the events this process itself just recorded for the session."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.latest_seq = 0
        self.must_read = True
        self.offered: deque[RecordedEvent] = deque(maxlen=MAX_OFFERED)

    def ring(self, seq: int | None = None, events: Sequence[RecordedEvent] = ()) -> None:
        if seq is None:
            self.must_read = True
        elif seq > self.latest_seq:
            self.latest_seq = seq
        self.offered.extend(events)
        self._event.set()

    def take_offered(self, after_seq: int) -> list[RecordedEvent]:
        """The offered events that continue exactly from ``after_seq``, in order."""
        taken: list[RecordedEvent] = []
        expected = after_seq + 1
        while self.offered:
            event = self.offered[0]
            if event.seq < expected:
                self.offered.popleft()
            elif event.seq == expected:
                taken.append(self.offered.popleft())
                expected += 1
            else:
                break  # a gap (another process wrote in between): read the table
        return taken

    def clear(self) -> None:
        self._event.clear()
        self.must_read = False

    async def wait(self, seconds: float) -> bool:
        """Wait for a ring; False when the timeout passed first (time for a fallback poll)."""
        try:
            async with asyncio.timeout(seconds):
                await self._event.wait()
            return True
        except TimeoutError:
            return False


class Notifier:
    """Owns the LISTEN connection; reconnects forever with backoff until closed."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[asyncpg.Connection]],
        *,
        keepalive: float = 5.0,
    ) -> None:
        self._connect = connect
        self._keepalive = keepalive
        self._sessions: dict[str, set[Wakeup]] = {}
        self._all: set[Wakeup] = set()
        self._task: asyncio.Task[None] | None = None
        self._connection: asyncpg.Connection | None = None
        self._in_use = asyncio.Lock()  # one statement at a time on the listening connection
        #: Set when the watchers come or go: LISTEN or UNLISTEN may be due.
        self._watchers_changed = asyncio.Event()
        #: Whether the current connection LISTENs (only while someone watches).
        self._listening = False
        self._reconciler: asyncio.Task[None] | None = None
        #: How many times the listening connection was (re)established; 1 after start.
        self.connections_made = 0
        #: Notifications received (tests and benchmarks look: none while nobody watches).
        self.notifications_heard = 0
        #: Backend pids whose notifications ring nobody (``ignore_senders``).
        self._own_senders: Container[int] = frozenset()
        #: Channels LISTENed on always, and whom each rings (``listen_also``).
        self._channels: dict[str, Callable[[], None]] = {}

    async def start(self) -> None:
        """Connect once (errors reach the caller), then supervise in the background."""
        first = await self._listen(await self._connect())
        self._task = asyncio.create_task(self._supervise(first), name="chronicle-notifier")
        self._reconciler = asyncio.create_task(
            self._follow_watchers(), name="chronicle-notifier-listen"
        )

    @property
    def backend_pid(self) -> int | None:
        """PostgreSQL pid of the listening connection (tests terminate it on purpose)."""
        return self._connection.get_server_pid() if self._connection else None

    @property
    def listening(self) -> bool:
        """Whether the connection LISTENs now (it does only while someone watches)."""
        return self._listening

    def _watched(self) -> bool:
        return bool(self._sessions or self._all)

    def _follow(self) -> None:
        """LISTEN or UNLISTEN when watching started or stopped (done by _follow_watchers)."""
        if self._watched() != self._listening:
            with contextlib.suppress(RuntimeError):  # called from __del__ after the loop closed
                self._watchers_changed.set()

    def watch(self, session_id: str | None) -> Wakeup:
        """A doorbell for one session, or for every session when ``session_id`` is None."""
        wakeup = Wakeup()
        if session_id is None:
            self._all.add(wakeup)
        else:
            self._sessions.setdefault(session_id, set()).add(wakeup)
        self._follow()
        return wakeup

    def unwatch(self, session_id: str | None, wakeup: Wakeup) -> None:
        if session_id is None:
            self._all.discard(wakeup)
        else:
            watchers = self._sessions.get(session_id)
            if watchers is not None:
                watchers.discard(wakeup)
                if not watchers:
                    del self._sessions[session_id]
        self._follow()

    def announce(
        self, session_id: str, last_seq: int, events: Sequence[RecordedEvent] = ()
    ) -> None:
        """Ring the watchers of a session; this process's own appends bring their events."""
        for wakeup in self._sessions.get(session_id, ()):
            wakeup.ring(last_seq, events)
        for wakeup in self._all:
            wakeup.ring(None)

    def recheck(self, session_id: str) -> None:
        """Have a session's watchers read the table: an append of this process may have
        committed without its answer arriving, and its own NOTIFY rings nobody."""
        for wakeup in self._sessions.get(session_id, ()):
            wakeup.ring(None)
        for wakeup in self._all:
            wakeup.ring(None)

    async def notify(self, payloads: list[str]) -> None:
        """Send NOTIFYs over the listening connection (idle otherwise, and always reconnected).

        Raises ``ConnectionDoesNotExistError`` while disconnected; the caller drops them.
        """
        connection = self._connection
        if connection is None or connection.is_closed():
            raise asyncpg.ConnectionDoesNotExistError("the listening connection is down")
        async with self._in_use:
            await connection.execute(NOTIFY_SQL, payloads)

    def listen_also(self, channel: str, on_ring: Callable[[], None]) -> None:
        """LISTEN on ``channel`` too, on every connection, whoever watches: for a rare channel
        (the masker's found secrets: app/store/masked_secrets.py), which costs nothing while
        quiet. ``on_ring`` is called for each notification, and after each (re)connection,
        when some may have been lost. Call it before ``start``."""
        self._channels[channel] = on_ring

    def ignore_senders(self, pids: Container[int]) -> None:
        """Ring nobody for notifications sent by these backends (checked as they arrive, so a
        live set): the store's append connections, whose appends ring their watchers
        themselves, with the events."""
        self._own_senders = pids

    def _ring_everyone(self) -> None:
        for watchers in self._sessions.values():
            for wakeup in watchers:
                wakeup.ring(None)
        for wakeup in self._all:
            wakeup.ring(None)

    def _on_notification(self, _conn: object, pid: int, _channel: str, payload: str) -> None:
        self.notifications_heard += 1
        if pid in self._own_senders:
            return
        session_id, _, seq = payload.rpartition(":")
        try:
            self.announce(session_id, int(seq))
        except ValueError:
            log.warning("ignoring malformed notification %r", payload)

    async def _listen(self, connection: asyncpg.Connection) -> asyncio.Event:
        """Take ``connection`` as the listening one: LISTEN on it if anyone watches."""
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _c: lost.set())
        self._listening = False
        for channel, on_ring in self._channels.items():
            try:
                await connection.add_listener(channel, lambda *_args, ring=on_ring: ring())
            except asyncpg.ReadOnlySQLTransactionError:
                # a hot standby takes no LISTEN: whoever rings re-reads on its own schedule
                log.debug("a standby: not listening on %s", channel)
            on_ring()  # what was sent while no connection listened
        if self._watched():
            await connection.add_listener(CHANNEL, self._on_notification)
            self._listening = True
        self._connection = connection
        self.connections_made += 1
        # Anything announced while we were not listening is found by a catch-up read.
        self._ring_everyone()
        self._follow()  # watchers that came or went during the LISTEN
        return lost

    async def _follow_watchers(self) -> None:
        """LISTEN when the first watcher comes, UNLISTEN when the last one goes."""
        while True:
            await self._watchers_changed.wait()
            self._watchers_changed.clear()
            try:
                async with self._in_use:
                    # Until it matches: watchers may come or go while (UN)LISTEN is on its way.
                    while self._watched() != self._listening:
                        connection = self._connection
                        if connection is None or connection.is_closed():
                            break  # the supervisor's reconnect LISTENs if anyone watches then
                        if self._listening:
                            await connection.remove_listener(CHANNEL, self._on_notification)
                            self._listening = False
                        else:
                            await connection.add_listener(CHANNEL, self._on_notification)
                            self._listening = True
                            # What committed before the LISTEN took effect: every watcher
                            # reads it after this ring.
                            self._ring_everyone()
            except TRANSIENT_ERRORS as exc:  # the supervisor reconnects, LISTENing if needed
                log.info("could not change LISTEN on the listening connection (%s)", exc)

    async def _supervise(self, lost: asyncio.Event) -> None:
        backoff = 0.05
        while True:
            await self._wait_until_lost(lost)
            self._ring_everyone()
            await self._drop_connection()
            while True:
                try:
                    lost = await self._listen(await self._connect())
                    backoff = 0.05
                    log.info("listening connection re-established")
                    break
                except TRANSIENT_ERRORS as exc:
                    log.warning("listening connection unavailable (%s); retrying", exc)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 2.0)

    async def _wait_until_lost(self, lost: asyncio.Event) -> None:
        """Return when the connection is gone; a silent one is found by a periodic ping."""
        while not lost.is_set():
            try:
                async with asyncio.timeout(self._keepalive):
                    await lost.wait()
            except TimeoutError:
                connection = self._connection
                if connection is None:
                    return
                try:
                    async with self._in_use, asyncio.timeout(self._keepalive):
                        await connection.execute("SELECT 1")
                except TRANSIENT_ERRORS:
                    return

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        self._listening = False
        if connection is not None and not connection.is_closed():
            connection.terminate()

    async def close(self) -> None:
        for task in (self._reconciler, self._task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._reconciler = None
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            with contextlib.suppress(*TRANSIENT_ERRORS):
                await asyncio.wait_for(connection.close(), 2)
        self._ring_everyone()
