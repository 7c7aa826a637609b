"""A session whose events fall in two monthly partitions of ``events``, made the way an old
session comes back into a database: its first events imported with ``chronicle_import`` (the
owner's; it keeps the times they were recorded) in the previous month, the rest appended now
by the application. Appends take their time from the database's clock, so this is how a test
gets a session across a month boundary without waiting for one."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg

from app.events import Event
from app.events.canonical import encode, hashed_document
from app.events.chain import link
from app.store.archive.loader import IMPORT_SQL
from app.store.partitions import current_month, ensure_partitions


def last_month() -> datetime:
    """Noon UTC ten days before this month began."""
    start = current_month()
    return datetime(start.year, start.month, 1, 12, tzinfo=UTC) - timedelta(days=10)


async def import_last_month(
    admin: asyncpg.Connection,
    session: UUID,
    events: Sequence[Event],
    *,
    partitioned: bool = True,
    chain: int = 1,
) -> datetime:
    """Record ``events`` as the session's first, a millisecond apart, last month (its partition
    made first, unless ``partitioned`` is False: a database before 0026); the time of the
    first. ``chain``: as ``import_at``."""
    at = last_month()
    await import_at(admin, session, events, at, partitioned=partitioned, chain=chain)
    return at


async def import_at(
    admin: asyncpg.Connection,
    session: UUID,
    events: Sequence[Event],
    at: datetime,
    *,
    partitioned: bool = True,
    chain: int = 1,
) -> None:
    """Record ``events`` as the session's first, a millisecond apart from ``at`` on (as
    ``chronicle import`` does, so with the owner's login). Any object with an event's
    attributes will do (``kind``, ``source``, ``cause``, ``event_id``, ``payload()``, and
    ``schema_version`` on its type): a payload no model would validate included. ``chain``
    1 hashes them as before 0029 (over the payload's text), 2 as the database hashes a new
    event now (over its tree commitment: a part can be redacted)."""
    if partitioned:
        await ensure_partitions(admin, since=at.date())
    previous = b""
    columns: list[list] = [[] for _ in range(9)]
    for seq, event in enumerate(events, 1):
        encoded = encode(event.payload())
        created = at + timedelta(milliseconds=seq)
        fields = {
            "session_id": str(session),
            "seq": seq,
            "event_id": str(event.event_id),
            "kind": event.kind,
            "source": event.source,
            "cause": event.cause,
            "payload": encoded.stored,
            "schema_version": type(event).schema_version,
            "created_at": created,
        }
        if chain == 2:
            previous = link(previous, **fields)
        else:
            previous = hashlib.sha256(previous + hashed_document(**fields).encode()).digest()
        values = (
            seq,
            event.event_id,
            event.kind,
            event.source,
            event.cause,
            encoded.text,
            type(event).schema_version,
            created,
            previous,
        )
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    await admin.fetchval(IMPORT_SQL, session, *columns)
