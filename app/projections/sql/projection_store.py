"""What a projection runner does in PostgreSQL: its lock, its position, its rows.

A projection (app/projections) is pure Python: it names the tables it owns (``Table``: name,
key, columns; created by migrations) and folds events into their rows. Every statement runs
here, so nothing above the store runs SQL (docs/architecture.md). A batch of events costs two
round trips on the runner's ``ProjectionConnection``:

1. load the rows the batch touches (one query per table), and fold every event into them in
   memory (``apply(rows, event)``, no I/O);
2. one statement (a data-modifying ``WITH``, atomic without a transaction block) moves the
   projection's position in ``projections`` *only from the position this runner applied up
   to*, and upserts the changed rows only if it did. A rebuild swapped in meanwhile (it moves
   the position under the row's lock) makes it write nothing: the runner then starts again
   from the stored position. Rows loaded before such a swap are therefore never written.

Rows and position commit together or not at all, so every event is applied exactly once in
``(tx, global_position)`` order, across crashes and restarts (pyeventsourcing's Tracking /
ProcessRecorder). Only the holder of the projection's advisory lock applies: a session-level
lock ``(LOCK_CLASS, hashtext(name))`` taken on the same connection that writes, so the lock
and the writes end together, however the process ends.

A rebuild folds the whole log into temporary tables of the same shape (``LIKE`` the real
ones; nothing else sees them, and a crash drops them) and then, in one transaction, replaces
the real rows with them and moves the position: readers see the old rows or the new ones,
never half, and the tables keep their identity, privileges and the views built on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel

from app.projections.sql.projection_tables import ProjectionCode, ProjectionRows, Table
from app.store import (
    TRANSIENT_ERRORS,
    Connection,
    ConnectionUnusableError,
    DatabaseError,
    Position,
    Record,
    RecordedEvent,
    StoreError,
)

if TYPE_CHECKING:
    from app.store import EventStore

log = logging.getLogger(__name__)

#: Advisory lock key space of projection runners (appends use 1129, session claims 1130).
LOCK_CLASS = 1131
#: The channel a rebuild announces its swap on (payload: the projection's name).
MOVED_CHANNEL = "chronicle_projection_moved"

#: Statements on a connection that seems gone are given up after this long.
CHECK_TIMEOUT = 5.0


class PositionMovedError(StoreError):
    """The projection's stored position is not where this runner left it: its tables were
    rebuilt and swapped in meanwhile. Nothing was written; start again from ``stored``."""

    def __init__(self, name: str, stored: Position) -> None:
        super().__init__(f"projection {name} was moved to {stored} by another process")
        self.stored = stored


class NewerVersionError(StoreError):
    """The projection's tables were built by a newer version of its code than this one."""

    def __init__(self, name: str, stored: int, mine: int) -> None:
        super().__init__(
            f"projection {name} was built by version {stored} of its code, and this Chronicle "
            f"has version {mine}: upgrade this Chronicle (it leaves the projection alone)"
        )
        self.stored = stored
        self.mine = mine


class Checkpoint(BaseModel):
    """A projection's row of ``projections``."""

    name: str
    version: int
    position: Position
    last_event_at: datetime | None
    updated_at: datetime
    rebuilt_at: datetime | None
    runner: str | None


def quoted(name: str) -> str:
    """An SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def building_name(table: Table[Any]) -> str:
    return f"{table.name}__building"


def _upsert_sql(table: Table[Any], target: str) -> str:
    names = ", ".join(quoted(name) for name in table.column_names)
    arrays = ", ".join(f"${i}::{kind}[]" for i, (_, kind) in enumerate(table.columns, 1))
    updates = ", ".join(
        f"{quoted(name)} = excluded.{quoted(name)}"
        for name in table.column_names
        if name != table.key
    )
    return (
        f"INSERT INTO {target} ({names}) SELECT * FROM unnest({arrays}) "
        f"ON CONFLICT ({quoted(table.key)}) DO UPDATE SET {updates}"
    )


def _apply_sql(tables: Sequence[Table[Any]]) -> str:
    """One statement that moves the projection's position from the expected one and, only if
    it did, upserts the batch's rows of ``tables``: atomic without a transaction block, so a
    batch costs two round trips (this and the load). Parameters: $1 name, $2 version, $3/$4
    the expected position, $5/$6 the new one, $7 the last event's time, then each table's
    column arrays in order. Returns whether the position moved (false: nothing written)."""
    parts = [
        "advanced AS (UPDATE projections SET tx = $5::xid8, global_position = $6::bigint, "
        "last_event_at = coalesce($7::timestamptz, last_event_at), updated_at = now() "
        "WHERE name = $1 AND version = $2 AND tx = $3::xid8 AND global_position = $4::bigint "
        "RETURNING 1)"
    ]
    first = 8
    for index, table in enumerate(tables):
        names = ", ".join(quoted(name) for name in table.column_names)
        arrays = ", ".join(f"${first + i}::{kind}[]" for i, (_, kind) in enumerate(table.columns))
        first += len(table.columns)
        updates = ", ".join(
            f"{quoted(name)} = excluded.{quoted(name)}"
            for name in table.column_names
            if name != table.key
        )
        parts.append(
            f"written{index} AS (INSERT INTO {quoted(table.name)} ({names}) "
            f"SELECT * FROM unnest({arrays}) WHERE EXISTS (SELECT 1 FROM advanced) "
            f"ON CONFLICT ({quoted(table.key)}) DO UPDATE SET {updates} RETURNING 1)"
        )
    return "WITH " + ",\n".join(parts) + "\nSELECT EXISTS (SELECT 1 FROM advanced)"


def _select_sql(table: Table[Any], source: str) -> str:
    names = ", ".join(quoted(name) for name in table.column_names)
    return f"SELECT {names} FROM {source} WHERE {quoted(table.key)} = ANY($1::{table.key_type()}[])"


TRY_LOCK_SQL = "SELECT pg_try_advisory_lock($1::int, hashtext($2::text))"
UNLOCK_SQL = "SELECT pg_advisory_unlock($1::int, hashtext($2::text))"
CHECKPOINT_COLUMNS = (
    "name, version, tx, global_position, last_event_at, updated_at, rebuilt_at, runner"
)
REGISTER_SQL = """
INSERT INTO projections (name, version) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING
"""
CHECKPOINT_SQL = f"SELECT {CHECKPOINT_COLUMNS} FROM projections WHERE name = $1"
LOCK_CHECKPOINT_SQL = f"{CHECKPOINT_SQL} FOR UPDATE"
SWAPPED_SQL = """
UPDATE projections
SET version = $2, tx = $3, global_position = $4, last_event_at = $5, updated_at = now(),
    rebuilt_at = now()
WHERE name = $1
"""
RUNNER_SQL = "UPDATE projections SET runner = $2 WHERE name = $1"
#: A follower's first row, at the head of the log: the last event a reader of all sessions
#: could see now (what commits later is after it).
REGISTER_AT_HEAD_SQL = """
WITH head AS (
    SELECT tx, global_position FROM events
    WHERE tx < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY tx DESC, global_position DESC LIMIT 1
)
INSERT INTO projections (name, version, tx, global_position)
VALUES ($1, $2, coalesce((SELECT tx FROM head), '0'::xid8),
        coalesce((SELECT global_position FROM head), 0))
ON CONFLICT (name) DO NOTHING
"""
#: A follower's position moved past what it finished with, only from where it left it.
ADVANCE_SQL = """
UPDATE projections SET tx = $5::xid8, global_position = $6::bigint,
    last_event_at = coalesce($7::timestamptz, last_event_at), updated_at = now()
WHERE name = $1 AND version = $2 AND tx = $3::xid8 AND global_position = $4::bigint
"""
#: Anything committed after the position that a reader of all sessions could see now.
ANYTHING_AFTER_SQL = """
SELECT EXISTS (
    SELECT 1 FROM events
    WHERE (tx, global_position) > ($1::xid8, $2::bigint)
      AND tx < pg_snapshot_xmin(pg_current_snapshot())
)
"""


#: Whether the projection is registered at ``$2`` with nothing a reader could see after it.
CURRENT_SQL = """
SELECT EXISTS (
    SELECT 1 FROM projections p
    WHERE p.name = $1 AND p.version = $2
      AND NOT EXISTS (
          SELECT 1 FROM events e
          WHERE (e.tx, e.global_position) > (p.tx, p.global_position)
            AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
      )
)
"""


async def is_current(store: EventStore, name: str, version: int) -> bool:
    """Whether the projection's tables (built by ``version``) already hold every event a
    reader could see now: one query, no lock, so a read of a current projection costs
    one round trip more than the read itself."""
    return bool(await store.pool.fetchval(CURRENT_SQL, name, version))


def checkpoint_from_row(row: Record) -> Checkpoint:
    return Checkpoint(
        name=row["name"],
        version=row["version"],
        position=Position(int(row["tx"]), row["global_position"]),
        last_event_at=row["last_event_at"],
        updated_at=row["updated_at"],
        rebuilt_at=row["rebuilt_at"],
        runner=row["runner"],
    )


def runner_identity() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


class ProjectionConnection:
    """One connection of a runner (or a rebuild, or a read that catches up) with the store's
    operations on it. ``dedicated`` opens one outside the pool (a runner holds its lock for
    as long as it runs); ``pooled`` borrows one for a short job and gives it back clean."""

    def __init__(self, connection: Connection, release: Any) -> None:
        self._connection = connection
        self._release = release
        self._locked: set[str] = set()
        self._building: set[str] = set()
        self._select_sql: dict[tuple[str, str], str] = {}
        self._upsert_sql: dict[tuple[str, str], str] = {}
        self._apply_sql: dict[tuple[str, ...], str] = {}

    @classmethod
    async def dedicated(cls, store: EventStore) -> Self:
        connection = await store.connect()

        async def close() -> None:
            await connection.close(timeout=CHECK_TIMEOUT)

        return cls(connection, close)

    @classmethod
    async def pooled(cls, store: EventStore) -> Self:
        connection = await store.pool.acquire()

        async def release() -> None:
            await store.pool.release(connection)

        return cls(connection, release)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Unlock and drop what this connection made, then close or release it; a connection
        that cannot is terminated, which ends its locks and temporary tables with it."""
        try:
            if self._locked or self._building:
                async with asyncio.timeout(CHECK_TIMEOUT):
                    for name in list(self._locked):
                        await self.unlock(name)
                    if self._building:
                        await self._connection.execute("DISCARD TEMP")
                        self._building.clear()
            await self._release()
        except (*TRANSIENT_ERRORS, DatabaseError, ConnectionUnusableError, TimeoutError):
            with contextlib.suppress(ConnectionUnusableError):
                self._connection.terminate()
            with contextlib.suppress(Exception):
                await self._release()

    # -- the lock --------------------------------------------------------------------------

    async def try_lock(self, name: str) -> bool:
        """Take the projection's lock unless another connection holds it."""
        if await self._connection.fetchval(TRY_LOCK_SQL, LOCK_CLASS, name):
            self._locked.add(name)
            return True
        return False

    async def unlock(self, name: str) -> None:
        if name in self._locked:
            await self._connection.fetchval(UNLOCK_SQL, LOCK_CLASS, name)
            self._locked.discard(name)

    async def set_runner(self, name: str, runner: str | None) -> None:
        await self._connection.execute(RUNNER_SQL, name, runner)

    # -- the position ----------------------------------------------------------------------

    async def register(self, name: str, version: int) -> Checkpoint:
        """The projection's checkpoint, made at the start of the log if it has none (its
        tables are then as the migration left them: empty)."""
        await self._connection.execute(REGISTER_SQL, name, version)
        return await self.checkpoint(name)

    async def register_at_head(self, name: str, version: int) -> Checkpoint:
        """The checkpoint of a follower of the log that starts at its head when it has none
        (the live OTLP exporter: what was recorded before it first ran is not sent)."""
        await self._connection.execute(REGISTER_AT_HEAD_SQL, name, version)
        return await self.checkpoint(name)

    async def advance(
        self, name: str, version: int, expected: Position, last: RecordedEvent
    ) -> Position:
        """Move a follower's position (one with no tables) from ``expected`` past ``last``;
        the new position. ``PositionMovedError`` when it is not at ``expected`` (moved by
        another process), with nothing written."""
        done = await self._connection.execute(
            ADVANCE_SQL, name, version, *expected, last.tx, last.global_position, last.created_at
        )
        if done != "UPDATE 1":
            raise PositionMovedError(name, (await self.checkpoint(name)).position)
        return last.position

    async def checkpoint(self, name: str) -> Checkpoint:
        row = await self._connection.fetchrow(CHECKPOINT_SQL, name)
        if row is None:
            raise StoreError(f"projection {name} has no row in the projections table")
        return checkpoint_from_row(row)

    async def on_moved(self, name: str, moved: Callable[[], None]) -> None:
        """Call ``moved`` whenever a rebuild swaps the projection ``name`` in (from any
        process), for as long as this connection lives."""

        def heard(_connection: object, _pid: int, _channel: str, payload: str) -> None:
            if payload == name:
                moved()

        await self._connection.add_listener(MOVED_CHANNEL, heard)

    async def anything_after(self, position: Position) -> bool:
        """Whether the log has events after ``position`` that a reader could see now."""
        return bool(await self._connection.fetchval(ANYTHING_AFTER_SQL, *position))

    # -- applying --------------------------------------------------------------------------

    async def apply(
        self, projection: ProjectionCode, events: Sequence[RecordedEvent], expected: Position
    ) -> Position:
        """Apply ``events`` (the next ones after ``expected``, in order) to the projection's
        tables and move its position past them, atomically; the new position.

        The rows are loaded, folded in memory, and written by one statement that moves the
        position only from ``expected`` (and writes only if it did). A rebuild swapped in
        meanwhile moved it, so nothing is written: ``PositionMovedError``; tables built by
        newer code: ``NewerVersionError``.
        """
        if not events:
            return expected
        last = events[-1]
        changed = await self._load_and_fold(projection, events, building=False)
        tables = tuple(table for table, _ in changed)
        key = (projection.name, *(table.name for table in tables))
        sql = self._apply_sql.get(key)
        if sql is None:
            sql = self._apply_sql[key] = _apply_sql(tables)
        columns: list[list[Any]] = []
        for table, rows in changed:
            values = [table.values(row) for row in rows]
            columns.extend(list(column) for column in zip(*values, strict=True))
        moved = await self._connection.fetchval(
            sql,
            projection.name,
            projection.version,
            expected.tx,
            expected.global_position,
            last.tx,
            last.global_position,
            last.created_at,
            *columns,
        )
        if not moved:
            stored = await self.checkpoint(projection.name)
            if stored.version > projection.version:
                raise NewerVersionError(projection.name, stored.version, projection.version)
            raise PositionMovedError(projection.name, stored.position)
        return last.position

    async def _load_and_fold(
        self, projection: ProjectionCode, events: Sequence[RecordedEvent], *, building: bool
    ) -> list[tuple[Table[Any], list[Any]]]:
        """Load the rows the events touch, fold the events into them; the changed rows."""
        wanted: dict[Table[Any], set[Any]] = {}
        for event in events:
            for table, key in projection.keys(event):
                wanted.setdefault(table, set()).add(key)
        rows = ProjectionRows()
        for table, keys in wanted.items():
            target = self._target(table, building)
            sql = self._select_sql.get((table.name, target))
            if sql is None:
                sql = self._select_sql[(table.name, target)] = _select_sql(table, target)
            found = await self._connection.fetch(sql, list(keys))
            make = table.row_type
            rows.loaded(table, (make(*record) for record in found))
        for event in events:
            projection.apply(rows, event)
        return list(rows.changed())

    async def _fold(
        self, projection: ProjectionCode, events: Sequence[RecordedEvent], *, building: bool
    ) -> None:
        for table, changed in await self._load_and_fold(projection, events, building=building):
            target = self._target(table, building)
            sql = self._upsert_sql.get((table.name, target))
            if sql is None:
                sql = self._upsert_sql[(table.name, target)] = _upsert_sql(table, target)
            values = [table.values(row) for row in changed]
            await self._connection.execute(
                sql, *(list(column) for column in zip(*values, strict=True))
            )

    def _target(self, table: Table[Any], building: bool) -> str:
        return f"pg_temp.{quoted(building_name(table))}" if building else quoted(table.name)

    # -- rebuilding ------------------------------------------------------------------------

    async def start_building(self, projection: ProjectionCode) -> None:
        """Empty temporary tables shaped like the projection's (columns, defaults, checks and
        the key), visible to this connection only."""
        for table in projection.tables:
            name = quoted(building_name(table))
            await self._connection.execute(f"DROP TABLE IF EXISTS pg_temp.{name}")
            await self._connection.execute(
                f"CREATE TEMPORARY TABLE {name} "
                f"(LIKE {quoted(table.name)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS, "
                f"PRIMARY KEY ({quoted(table.key)}))"
            )
            self._building.add(table.name)
        # A temporary table has no statistics (autovacuum never analyses one), so the plan
        # a prepared statement settles on after its fifth run, while the table was nearly
        # empty, scans it whole: each batch's read of its rows then grows with the rows
        # built, and a rebuild of 10M events took 1.3-1.8x as long (bench/scale.py). A plan
        # per execution sees the table as it is now and takes its key.
        await self._connection.execute("SET plan_cache_mode = force_custom_plan")

    async def build(self, projection: ProjectionCode, events: Sequence[RecordedEvent]) -> None:
        """Apply ``events`` to the temporary tables (a rebuild's own position is its caller's)."""
        if events:
            async with self._connection.transaction():
                await self._fold(projection, events, building=True)

    async def swap_in(
        self, projection: ProjectionCode, position: Position, last_event_at: datetime | None
    ) -> None:
        """Replace the projection's rows with the temporary tables' and set its position and
        version, in one transaction (readers see all old rows or all new ones)."""
        async with self._connection.transaction():
            row = await self._connection.fetchrow(LOCK_CHECKPOINT_SQL, projection.name)
            if row is None:
                raise StoreError(f"projection {projection.name} has no row in projections")
            stored = checkpoint_from_row(row)
            if stored.version > projection.version:
                raise NewerVersionError(projection.name, stored.version, projection.version)
            for table in projection.tables:
                names = ", ".join(quoted(name) for name in table.column_names)
                await self._connection.execute(f"DELETE FROM {quoted(table.name)}")
                await self._connection.execute(
                    f"INSERT INTO {quoted(table.name)} ({names}) "
                    f"SELECT {names} FROM pg_temp.{quoted(building_name(table))}"
                )
            await self._connection.execute(
                SWAPPED_SQL,
                projection.name,
                projection.version,
                position.tx,
                position.global_position,
                last_event_at,
            )
            # delivered at commit: a runner that is idle would otherwise find out only at
            # its next batch, and read as caught up with rows the rebuild left behind it
            await self._connection.execute(
                "SELECT pg_notify($1, $2)", MOVED_CHANNEL, projection.name
            )
        for table in projection.tables:
            await self._connection.execute(
                f"DROP TABLE IF EXISTS pg_temp.{quoted(building_name(table))}"
            )
            self._building.discard(table.name)
        # the projection's own tables have statistics: back to the server's choice
        await self._connection.execute("RESET plan_cache_mode")
