"""app/store/partitions.py: months made ahead (idempotent, also when two processes race),
listed, dropped only by the owner and only once ended; an append into a month without a
partition fails with a clear error; the projection runner keeps the months ahead made."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import asyncpg
import pytest

from app.config import Settings
from app.events import Message, Run, SessionCreated
from app.projections.config import ProjectionsConfig
from app.projections.runner import running_projections
from app.store import EventStore
from app.store.archive import export_sessions, import_file
from app.store.errors import PartitionError
from app.store.partitions import (
    current_month,
    detach_partition,
    ensure_partitions,
    list_partitions,
)
from tests.support.months import import_last_month


def _month(offset: int) -> str:
    start = current_month()
    index = start.year * 12 + start.month - 1 + offset
    return f"events_{index // 12:04d}_{index % 12 + 1:02d}"


async def _drop_by_hand(superuser: asyncpg.Connection, *names: str) -> None:
    """What only a superuser can do: take a month away whatever it is (to test without it)."""
    for name in names:
        await superuser.execute(f"ALTER TABLE events DETACH PARTITION {name}; DROP TABLE {name}")


async def test_the_migration_made_this_month_and_two_ahead(superuser: asyncpg.Connection) -> None:
    partitions = await list_partitions(superuser)
    assert [p.name for p in partitions] == [_month(0), _month(1), _month(2)]
    assert all(p.attached for p in partitions)
    assert partitions[0].start.date() == current_month()
    assert [p.end for p in partitions[:-1]] == [p.start for p in partitions[1:]]
    assert await ensure_partitions(superuser) == []  # idempotent


async def test_two_processes_making_the_same_months_at_once(
    superuser: asyncpg.Connection, database_url: str, store: EventStore
) -> None:
    await _drop_by_hand(superuser, _month(2), _month(1))
    other = await asyncpg.connect(database_url)
    try:
        made = await asyncio.gather(
            ensure_partitions(store.pool, months_ahead=3), ensure_partitions(other, months_ahead=3)
        )
    finally:
        await other.close()
    assert sorted(made[0] + made[1]) == [_month(1), _month(2), _month(3)]
    assert [p.name for p in await list_partitions(superuser)] == [_month(i) for i in range(4)]


async def test_an_append_into_a_month_without_partition_fails_clearly(
    superuser: asyncpg.Connection, store: EventStore
) -> None:
    await _drop_by_hand(superuser, _month(0))
    session = uuid.uuid4()
    with pytest.raises(PartitionError, match=r"no partition for this month.*partitions ensure"):
        await store.append(session, [SessionCreated(title="t")])
    assert await superuser.fetchval("SELECT count(*) FROM sessions WHERE id = $1", session) == 0
    # the application's login may make it (what the projection runner does)
    assert await ensure_partitions(store.pool) == [_month(0)]
    await store.append(session, [SessionCreated(title="t")])
    assert (await store.verify(session)).ok


async def test_the_projection_runner_keeps_the_months_ahead(
    superuser: asyncpg.Connection, store: EventStore
) -> None:
    await _drop_by_hand(superuser, _month(2), _month(1))
    config = ProjectionsConfig(partitions_interval=0.2, partitions_ahead=2)
    async with running_projections(store, [], config):
        for _ in range(100):
            if len(await list_partitions(superuser)) == 3:
                break
            await asyncio.sleep(0.05)
    assert [p.name for p in await list_partitions(superuser)] == [_month(0), _month(1), _month(2)]


async def test_the_owner_drops_an_ended_month_and_an_import_brings_it_back(
    superuser: asyncpg.Connection, store: EventStore, app_login: asyncpg.Connection
) -> None:
    gone, stays = uuid.uuid4(), uuid.uuid4()
    events = [SessionCreated(title="archived"), Run(command="ls")]
    await import_last_month(superuser, gone, events)
    await store.append(stays, [Message(content="this month")])
    with pytest.raises(PartitionError, match="has not come yet"):
        await detach_partition(superuser, _month(0))
    with pytest.raises(PartitionError, match="owner"):
        await detach_partition(app_login, _month(-1))
    with pytest.raises(PartitionError, match="no partition events_1999_01"):
        await detach_partition(superuser, "events_1999_01")

    await detach_partition(superuser, _month(-1))

    assert _month(-1) not in {p.name for p in await list_partitions(superuser)}
    assert await store.read(gone) == []
    for table in ("sessions", "event_ids"):
        column = "id" if table == "sessions" else "session_id"
        assert (
            await superuser.fetchval(f"SELECT count(*) FROM {table} WHERE {column} = $1", gone) == 0
        )
    assert (await store.verify(stays)).ok
    # the same events come back (their month made again), and verify
    await import_last_month(superuser, gone, events)
    assert [e.seq for e in await store.read(gone)] == [1, 2]
    assert (await store.verify(gone)).ok


async def test_an_archived_month_comes_back_with_chronicle_import(
    superuser: asyncpg.Connection,
    store: EventStore,
    database_url: str,
    settings: Settings,
    tmp_path: Path,
) -> None:
    """Export a session of last month, drop the month, import the file: the import makes
    the month it needs again (as the owner) and the session verifies."""
    session = uuid.uuid4()
    await import_last_month(superuser, session, [SessionCreated(title="t"), Message(content="m")])
    path = tmp_path / "archive.jsonl"
    with path.open("w", encoding="utf-8") as out:
        await export_sessions(store, [session], out)
    await detach_partition(superuser, _month(-1))
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as owner:
        report = await import_file(owner, path)
    assert report.imported == 2
    assert _month(-1) in {p.name for p in await list_partitions(superuser)}
    assert (await store.verify(session)).ok
