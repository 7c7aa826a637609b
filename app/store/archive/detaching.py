"""Which months of ``events`` an archive lets go, and letting them go.

A month (a partition, app/store/partitions.py) is detached only when all of these hold:

- the archive just written holds a session with events in it ("the months it filled");
- every session with events in that month is archived (by this run or an earlier one: its
  ``sessions`` row says so), so nothing live loses an event;
- the month has ended (the database refuses the current month anyway).

A month that stays names why (the first session that keeps it). When ``events`` is not
partitioned (a database before the partitions migration), nothing is detached and the
reason says so; the sessions are archived all the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import BaseModel

from app.events.platform_audit import PLATFORM_LOG_ID
from app.store.partitions import (
    EventPartition,
    PartitionError,
    detach_partition,
    list_partitions,
)

if TYPE_CHECKING:
    from app.store.event_store import EventStore

ARCHIVE_IN_MONTH_SQL = """
SELECT EXISTS (
    SELECT 1 FROM events
    WHERE session_id = ANY($1::uuid[]) AND created_at >= $2 AND created_at < $3
)
"""
LIVE_IN_MONTH_SQL = """
SELECT e.session_id FROM events e JOIN sessions s ON s.id = e.session_id
WHERE e.created_at >= $1 AND e.created_at < $2 AND s.archived_at IS NULL
LIMIT 1
"""


class MonthVerdict(BaseModel):
    """One month the archive filled: whether it is detached, and why not if it is kept."""

    partition: str
    start: datetime
    end: datetime
    detach: bool
    reason: str = ""


class DetachPlan(BaseModel):
    #: None when events is partitioned; else why nothing can be detached.
    unpartitioned: str | None = None
    months: list[MonthVerdict] = []


async def plan_detaching(
    store: EventStore, sessions: Sequence[UUID], now: datetime | None = None
) -> DetachPlan:
    """The months the archived ``sessions`` filled, each with its verdict (see the module)."""
    moment = now or datetime.now(UTC)
    try:
        partitions: list[EventPartition] = await list_partitions(store.pool)
    except PartitionError as exc:
        return DetachPlan(unpartitioned=f"events is not partitioned here ({exc})")
    ids = list(sessions)
    months: list[MonthVerdict] = []
    for partition in partitions:
        if not partition.attached:
            continue
        filled = await store.pool.fetchval(
            ARCHIVE_IN_MONTH_SQL, ids, partition.start, partition.end
        )
        if not filled:
            continue
        if partition.end > moment:
            months.append(_kept(partition, "its month has not ended"))
            continue
        live = await store.pool.fetchval(LIVE_IN_MONTH_SQL, partition.start, partition.end)
        if live is not None:
            months.append(_kept(partition, _keeper(live)))
            continue
        months.append(
            MonthVerdict(
                partition=partition.name, start=partition.start, end=partition.end, detach=True
            )
        )
    return DetachPlan(months=months)


def _keeper(session: UUID) -> str:
    if session == PLATFORM_LOG_ID:
        return (
            "the platform's audit log has records in it (a stream that never ends, so never "
            "archived)"
        )
    return f"session {session} has events in it and is not archived"


def _kept(partition: EventPartition, reason: str) -> MonthVerdict:
    return MonthVerdict(
        partition=partition.name,
        start=partition.start,
        end=partition.end,
        detach=False,
        reason=reason,
    )


async def detach_month(store: EventStore, month: MonthVerdict) -> None:
    """Detach (and drop) the month, checking again under the database's own rules that no
    session in it is live: a session archived meanwhile is fine, one that came in is not."""
    live = await store.pool.fetchval(LIVE_IN_MONTH_SQL, month.start, month.end)
    if live is not None:
        raise PartitionError(
            f"{month.partition} was not detached: session {live} has events in it and is not "
            "archived"
        )
    await detach_partition(store.pool, month.partition)
