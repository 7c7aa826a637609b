"""Group commit in the client: appends that arrive while others are in flight share a call.

A commit waits for its WAL flush, so one transaction per append caps throughput at the
flush rate, and every append pays a round trip. When writers arrive together (many sessions
in one process), the ones that find every slot busy are queued and sent together through
``chronicle_append_many()``: one round trip, one commit, each append still atomic on its own
(a subtransaction per append), failures reported per append. A lone writer never waits: its
append goes out at once, exactly as it would without this.

Appends go out on connections of their own (``AppendConnections``), not through the pool:
acquiring and releasing a pooled connection costs more client time than the round trip it
wraps on a busy machine. A single event goes through ``chronicle_append_one()`` (scalar
arguments, one row back); an append that has nothing else of this process in flight asks the
database to send its NOTIFY in the same transaction, so it costs one round trip in all (see
``AppendResult.notified``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple
from uuid import UUID

import asyncpg

from app.errors import ChronicleError
from app.store.append import (
    APPEND_ONE_SQL,
    APPEND_ONE_WITH_MESSAGES_SQL,
    APPEND_SQL,
    APPEND_WITH_MESSAGES_SQL,
    PUT_MESSAGES_FROM,
    EncodedBatch,
    PromptMessages,
)
from app.store.transient import TRANSIENT_ERRORS

APPEND_MANY_SQL = (
    "SELECT * FROM chronicle_append_many($1, $2, $3, $4, $5, $6, $7, $8, $9) ORDER BY grp, seq"
)
#: A group whose appends carry prompt messages stores them all in the same statement.
APPEND_MANY_WITH_MESSAGES_SQL = (
    f"SELECT a.* FROM {PUT_MESSAGES_FROM},"
    " chronicle_append_many($1, $2, $3, $4, $5, $6, $7, $8, $9) AS a ORDER BY grp, seq"
)


class AppendRefused(ChronicleError):
    """The database refused one append (its fields, as asyncpg reports them)."""

    def __init__(
        self, sqlstate: str, message: str, detail: str | None, constraint_name: str | None
    ) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message
        self.detail = detail
        self.constraint_name = constraint_name

    @classmethod
    def from_postgres(cls, exc: asyncpg.PostgresError) -> AppendRefused:
        return cls(
            exc.sqlstate,
            exc.message,
            getattr(exc, "detail", None),
            getattr(exc, "constraint_name", None),
        )


class CoalescerStats(NamedTuple):
    calls: int
    appends: int


class AppendResult(NamedTuple):
    """What the database assigned to each event, and whether it already sent the NOTIFY."""

    rows: list[Any]
    #: True when the append's own transaction notified; else the caller announces it.
    notified: bool


class AppendConnections:
    """The connections appends go out on: opened when first needed, at most one per append
    in flight, and dropped (to be opened again) when one breaks or a call on it is
    interrupted, so a lost server costs a reconnect, never a connection in an unknown state."""

    def __init__(self, connect: Callable[[], Awaitable[asyncpg.Connection]]) -> None:
        self._connect = connect
        self._idle: list[asyncpg.Connection] = []
        self._closed = False
        #: The server pids of the open connections (their NOTIFYs are this process's own).
        self.backend_pids: set[int] = set()

    async def run(self, call: Callable[[asyncpg.Connection], Awaitable[Any]]) -> Any:
        if self._idle:
            connection = self._idle.pop()
        else:
            connection = await self._connect()
            self.backend_pids.add(connection.get_server_pid())
        try:
            result = await call(connection)
        except asyncpg.PostgresError as exc:
            if isinstance(exc, TRANSIENT_ERRORS):  # the server is going away or gone
                self._drop(connection)
            else:  # refused: the connection is fine, its transaction rolled back
                self._keep(connection)
            raise
        except BaseException:
            self._drop(connection)
            raise
        self._keep(connection)
        return result

    def _keep(self, connection: asyncpg.Connection) -> None:
        if self._closed or connection.is_closed():
            self._drop(connection)
        else:
            self._idle.append(connection)

    def _drop(self, connection: asyncpg.Connection) -> None:
        self.backend_pids.discard(connection.get_server_pid())
        connection.terminate()

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            self.backend_pids.discard(connection.get_server_pid())
            with contextlib.suppress(*TRANSIENT_ERRORS):
                await asyncio.wait_for(connection.close(), 2)


class _Request(NamedTuple):
    session_id: UUID
    expected_seq: int | None
    batch: EncodedBatch
    messages: PromptMessages | None
    result: asyncio.Future[AppendResult]


class AppendCoalescer:
    """At most ``max_in_flight`` append calls at once; the rest wait and go out together."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[asyncpg.Connection]],
        *,
        max_in_flight: int = 2,
        max_events_per_call: int = 20_000,
    ) -> None:
        self._connections = AppendConnections(connect)
        self._max_in_flight = max_in_flight
        self._max_events = max_events_per_call
        self._in_flight = 0
        self._queue: deque[_Request] = deque()
        self._flushes: set[asyncio.Task[None]] = set()
        self._calls = 0
        self._appends = 0

    @property
    def backend_pids(self) -> set[int]:
        """Server pids of the append connections open now (a live set)."""
        return self._connections.backend_pids

    @property
    def stats(self) -> CoalescerStats:
        """Database calls made and appends they carried (appends/calls > 1: group commit)."""
        return CoalescerStats(self._calls, self._appends)

    async def append(
        self,
        session_id: UUID,
        expected_seq: int | None,
        batch: EncodedBatch,
        messages: PromptMessages | None = None,
    ) -> AppendResult:
        """The rows the database returned (seq, position, tx, time, hash of each event);
        ``AppendRefused`` if it said no. ``messages`` are stored in the same transaction."""
        if self._in_flight < self._max_in_flight and not self._queue:
            # Alone: the transaction may notify, no other commit of ours waits for its lock.
            notify = self._in_flight == 0
            self._in_flight += 1
            try:
                return await self._one(session_id, expected_seq, batch, messages, notify=notify)
            finally:
                self._in_flight -= 1
                self._start_flushes()
        result: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        self._queue.append(_Request(session_id, expected_seq, batch, messages, result))
        self._start_flushes()
        return await result

    async def close(self) -> None:
        await self._connections.close()

    async def _one(
        self,
        session_id: UUID,
        expected_seq: int | None,
        batch: EncodedBatch,
        messages: PromptMessages | None,
        *,
        notify: bool,
    ) -> AppendResult:
        self._calls += 1
        self._appends += 1
        stored: tuple[Any, ...] = () if messages is None else tuple(messages)
        try:
            if len(batch.event_ids) == 1:
                row = await self._connections.run(
                    lambda connection: connection.fetchrow(
                        APPEND_ONE_WITH_MESSAGES_SQL if stored else APPEND_ONE_SQL,
                        session_id,
                        expected_seq,
                        batch.event_ids[0],
                        batch.kinds[0],
                        batch.sources[0],
                        batch.causes[0],
                        batch.payload_texts[0],
                        batch.versions[0],
                        notify,
                        *stored,
                    )
                )
                return AppendResult([row], notify)
            rows = await self._connections.run(
                lambda connection: connection.fetch(
                    APPEND_WITH_MESSAGES_SQL if stored else APPEND_SQL,
                    session_id,
                    expected_seq,
                    batch.event_ids,
                    batch.kinds,
                    batch.sources,
                    batch.causes,
                    batch.payload_texts,
                    batch.versions,
                    notify,
                    *stored,
                )
            )
            return AppendResult(rows, notify)
        except asyncpg.PostgresError as exc:
            if isinstance(exc, TRANSIENT_ERRORS):  # shutting down, starting, connection lost
                raise
            raise AppendRefused.from_postgres(exc) from None

    def _start_flushes(self) -> None:
        while self._queue and self._in_flight < self._max_in_flight:
            group = [self._queue.popleft()]
            events = len(group[0].batch.event_ids)
            while self._queue and events + len(self._queue[0].batch.event_ids) <= self._max_events:
                events += len(self._queue[0].batch.event_ids)
                group.append(self._queue.popleft())
            self._in_flight += 1
            task = asyncio.create_task(self._flush(group), name="chronicle-append-flush")
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)

    async def _flush(self, group: list[_Request]) -> None:
        try:
            if len(group) == 1:
                await self._each_alone(group)
                return
            self._calls += 1
            self._appends += len(group)
            arguments = _many_arguments(group)
            messages = PromptMessages.joined(request.messages for request in group)
            sql = APPEND_MANY_SQL if messages is None else APPEND_MANY_WITH_MESSAGES_SQL
            try:
                rows = await self._connections.run(
                    lambda connection: connection.fetch(sql, *arguments, *(messages or ()))
                )
            except asyncpg.PostgresError as exc:
                if messages is not None and not isinstance(exc, TRANSIENT_ERRORS):
                    # Messages refused (one not matching its key): the whole statement rolled
                    # back. Each append goes again on its own, so only the one at fault fails.
                    await self._each_alone(group)
                    return
                for request in group:
                    _settle(request.result, exception=exc)
                return
            except BaseException as exc:
                for request in group:
                    _settle(request.result, exception=exc)
                return
            by_group: list[list[Any]] = [[] for _ in group]
            for row in rows:
                by_group[row["grp"] - 1].append(row)
            for request, its_rows in zip(group, by_group, strict=True):
                first = its_rows[0] if its_rows else None
                if first is not None and first["error_state"] is not None:
                    refused = AppendRefused(
                        first["error_state"],
                        first["error_message"],
                        first["error_detail"],
                        first["error_constraint"],
                    )
                    _settle(request.result, exception=refused)
                else:
                    _settle(request.result, result=AppendResult(its_rows, False))
        finally:
            self._in_flight -= 1
            self._start_flushes()

    async def _each_alone(self, group: list[_Request]) -> None:
        """Send each append of ``group`` in a call of its own, settling each with its result."""
        for request in group:
            try:
                one = await self._one(
                    request.session_id,
                    request.expected_seq,
                    request.batch,
                    request.messages,
                    notify=False,
                )
            except BaseException as exc:
                _settle(request.result, exception=exc)
            else:
                _settle(request.result, result=one)


def _settle(
    future: asyncio.Future[AppendResult],
    *,
    result: AppendResult | None = None,
    exception: BaseException | None = None,
) -> None:
    if future.done():  # the writer was cancelled while it waited
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result or AppendResult([], False))


def _many_arguments(group: list[_Request]) -> tuple[list[Any], ...]:
    sessions, expected, sizes = [], [], []
    event_ids: list[Any] = []
    kinds: list[str] = []
    sources: list[str] = []
    causes: list[int | None] = []
    payloads: list[str] = []
    versions: list[int] = []
    for request in group:
        batch = request.batch
        sessions.append(request.session_id)
        expected.append(request.expected_seq)
        sizes.append(len(batch.event_ids))
        event_ids += batch.event_ids
        kinds += batch.kinds
        sources += batch.sources
        causes += batch.causes
        payloads += batch.payload_texts
        versions += batch.versions
    return (sessions, expected, sizes, event_ids, kinds, sources, causes, payloads, versions)
