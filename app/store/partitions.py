"""Monthly partitions of ``events``: made ahead of need, listed, and dropped only on purpose.

``events`` is ``PARTITION BY RANGE (created_at)``, one partition a month (migration 0026,
docs/scale-out.md "Monthly partitions of events"). An append into a month without a partition
fails (there is no default partition, which would later block attaching the month), so the
projection runner and ``chronicle db partitions ensure`` keep the next months in place.

The work is done by database functions owned by ``chronicle_owner``:

- ``chronicle_ensure_event_partitions(from, months)`` (SECURITY DEFINER, executable by
  ``chronicle_app``): creates each missing month with its own keys and TRUNCATE trigger, then
  attaches it (``ATTACH`` takes a lock that appends and reads do not wait for); two callers
  racing are serialised by an advisory lock, so both return and the month exists once;
- ``chronicle_drop_event_partition(name)`` (SECURITY DEFINER, executable by nobody but the
  owner): detaches and drops one past month, the one removal the log allows, for
  ``chronicle archive`` after it has written and verified the archive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from typing import Any

import asyncpg
from pydantic import BaseModel, ConfigDict

from app.store.errors import PartitionError
from app.store.event_store import EventStore
from app.store.urls import asyncpg_dsn

#: Months made ahead of the current one by default: the current month and the next two.
MONTHS_AHEAD = 2

ENSURE_SQL = "SELECT name FROM chronicle_ensure_event_partitions($1::date, $2::integer) AS name"
LIST_SQL = "SELECT name, starts, ends, attached FROM chronicle_event_partitions()"
DROP_SQL = "SELECT chronicle_drop_event_partition($1::text)"


class EventPartition(BaseModel):
    """One partition of ``events``: the rows with ``start <= created_at < end``."""

    model_config = ConfigDict(frozen=True)

    name: str
    start: datetime
    #: exclusive
    end: datetime
    #: False for a table named like a month of ``events`` that is not (or no longer) attached.
    attached: bool


def current_month(now: datetime | None = None) -> date:
    """The first day of the month ``now`` (UTC) falls in: months are UTC months."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return date(moment.year, moment.month, 1)


async def ensure_partitions(
    pool_or_conn: EventStore | asyncpg.Pool | asyncpg.Connection,
    *,
    months_ahead: int = MONTHS_AHEAD,
    since: date | None = None,
) -> list[str]:
    """Make every missing monthly partition from ``since`` (default: this month, UTC) to
    ``months_ahead`` months after this one; the names made (none when all exist).

    ``pool_or_conn``: an ``EventStore`` (its pool), a pool or a connection. Idempotent, and
    safe when several processes call it at once. ``since`` earlier than this
    month is for bringing back an archive of an old month (``chronicle import``).
    """
    if months_ahead < 0:
        raise PartitionError(f"months_ahead must be 0 or more, not {months_ahead}")
    this_month = current_month()
    first = date((since or this_month).year, (since or this_month).month, 1)
    last_index = this_month.year * 12 + this_month.month - 1 + months_ahead
    months = last_index - (first.year * 12 + first.month - 1) + 1
    if months < 1:
        return []
    target = pool_or_conn.pool if isinstance(pool_or_conn, EventStore) else pool_or_conn
    rows = await _fetch(target, ENSURE_SQL, first, months)
    return [row["name"] for row in rows]


async def list_partitions(conn: asyncpg.Pool | asyncpg.Connection) -> list[EventPartition]:
    """Every partition of ``events`` oldest first, with the month tables not attached."""
    rows = await _fetch(conn, LIST_SQL)
    return [
        EventPartition(
            name=row["name"], start=row["starts"], end=row["ends"], attached=row["attached"]
        )
        for row in rows
    ]


async def detach_partition(conn: asyncpg.Pool | asyncpg.Connection, name: str) -> None:
    """Detach the partition ``name`` and drop it, with the idempotency keys and the session
    heads of its events (so ``chronicle import`` can bring them back).

    Only the owner's login may (``CHRONICLE_OWNER_DATABASE_URL``); the database refuses the
    application's roles. It refuses a partition whose month has not ended.
    """
    await _fetch(conn, DROP_SQL, name)


@asynccontextmanager
async def connected(url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of its own to ``url`` for the calls above (a maintenance command's)."""
    connection = await asyncpg.connect(asyncpg_dsn(url))
    try:
        yield connection
    finally:
        await connection.close()


async def _fetch(
    conn: asyncpg.Pool | asyncpg.Connection, sql: str, *args: Any
) -> list[asyncpg.Record]:
    try:
        return await conn.fetch(sql, *args)
    except asyncpg.InsufficientPrivilegeError as exc:
        raise PartitionError(
            f"this login may not do that ({exc}): dropping a partition of events is the "
            "owner's (connect with CHRONICLE_OWNER_DATABASE_URL)"
        ) from None
    except asyncpg.UndefinedFunctionError:
        raise PartitionError(
            "this database has no partitioned events table: run `chronicle db migrate`"
        ) from None
    except asyncpg.PostgresError as exc:
        detail = f" ({exc.detail})" if getattr(exc, "detail", None) else ""
        hint = f" {exc.hint}" if getattr(exc, "hint", None) else ""
        raise PartitionError(f"{exc}{detail}.{hint}".rstrip(".")) from None
