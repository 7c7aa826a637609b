"""Migration 0026 moves a database's events into monthly partitions and back: every row keeps
its position, transaction, time and hash, every chain still verifies, and appends go on from
where they were (a database in the wild has data when it upgrades)."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from app.config import Settings
from app.events import Message, Run, RunOutput, SessionCreated
from app.store import EventStore, migrate
from app.store.partitions import list_partitions
from tests.support.months import import_last_month, last_month
from tests.support.postgres import ServerAddress, database_from_template

ROWS = (
    "SELECT global_position, session_id, seq, event_id, tx, kind, cause, payload::text, "
    "created_at, hash FROM events ORDER BY global_position"
)


@pytest.mark.usefixtures("role_settings_changing")
async def test_upgrade_with_data_keeps_every_chain(
    pg_address: ServerAddress, settings: Settings
) -> None:
    for url in database_from_template(pg_address, "template1", f"p_{uuid.uuid4().hex[:12]}"):
        migrate.upgrade(url, "0025")
        old, live, big = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        resent = Message(content="sent once")
        admin = await asyncpg.connect(url)
        try:
            # a session of last month, as an import would have left it
            await import_last_month(
                admin, old, [SessionCreated(title="old"), Run(command="ls")], partitioned=False
            )
            async with await EventStore.open(
                url, config=settings.store, masker=settings.masker()
            ) as store:
                # ... that went on this month, and two of this month only, one with a blob
                await store.append(old, [RunOutput(cause=2, output="a\n", exit_code=0)])
                await store.append(live, [SessionCreated(title="live"), resent])
                await store.append(big, [SessionCreated(title="big")])
                await store.append(big, [Message(content="x" * 300_000)])
            before = await admin.fetch(ROWS)
        finally:
            await admin.close()

        migrate.upgrade(url)

        admin = await asyncpg.connect(url)
        try:
            assert await admin.fetch(ROWS) == before
            assert await admin.fetchval("SELECT count(*) FROM event_ids") == len(before)
            months = {p.name: p for p in await list_partitions(admin)}
            last = last_month()
            assert f"events_{last.year:04d}_{last.month:02d}" in months
            assert len(months) == 4  # last month, this one and the two after it
            heads = await admin.fetch(
                "SELECT s.id, s.first_event_at, s.last_event_at, min(e.created_at) AS lo, "
                "max(e.created_at) AS hi FROM sessions s JOIN events e ON e.session_id = s.id "
                "GROUP BY s.id"
            )
            assert len(heads) == 3
            assert all(
                (h["first_event_at"], h["last_event_at"]) == (h["lo"], h["hi"]) for h in heads
            )
            async with await EventStore.open(
                url, config=settings.store, masker=settings.masker()
            ) as store:
                for session in (old, live, big):
                    report = await store.verify(session)
                    assert report.ok, report
                # appends go on where they were; a re-sent event is still recognised
                more = await store.append(old, [Message(content="after")], expected_seq=3)
                assert more[0].seq == 4
                assert more[0].global_position > max(row["global_position"] for row in before)
                again = await store.append(live, [resent])
                assert [e.seq for e in again] == [2]
                assert (await store.verify(old)).ok
            after = await admin.fetch(ROWS)
        finally:
            await admin.close()

        migrate.downgrade(url, "0025")

        admin = await asyncpg.connect(url)
        try:
            assert await admin.fetch(ROWS) == after
            assert await admin.fetchval("SELECT to_regclass('event_ids')") is None
            assert (
                await admin.fetchval("SELECT relkind FROM pg_class WHERE oid = 'events'::regclass")
                == b"r"
            )
        finally:
            await admin.close()
