"""Rebuilding a projection: the rows a rebuild computes from the whole log equal the rows a
runner built incrementally while the log was written, and both say what was written."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import asyncpg
import pytest

from app.projections import (
    ProjectionRunner,
    ProjectionsConfig,
    SessionState,
    rebuild,
)
from app.projections.sql.projection_store import PositionMovedError, ProjectionConnection
from app.store import EventStore, Position
from tests.support.projection_workload import Workload, append_workload

ROWS_SQL = "SELECT * FROM session_state ORDER BY session_id"


async def rows(connection: asyncpg.Connection) -> list[dict[str, Any]]:
    return [dict(row) for row in await connection.fetch(ROWS_SQL)]


def check_against_workload(found: list[dict[str, Any]], workload: Workload) -> None:
    """The rows say what the workload wrote (facts counted while writing, not by the fold)."""
    assert len(found) == len(workload.sessions)
    for row in found:
        expected = workload.sessions[row["session_id"]]
        assert row["title"] == expected.title
        assert row["model"] == expected.model
        assert row["last_seq"] == expected.events
        assert row["steps"] == expected.steps
        assert row["model_calls"] == expected.model_calls
        assert row["failed_calls"] == expected.failed_calls
        assert row["unpriced_calls"] == expected.unpriced_calls
        assert row["input_tokens"] == expected.input_tokens
        assert row["output_tokens"] == expected.output_tokens
        assert row["errors"] == expected.errors
        assert row["status"] == expected.status
        assert (row["ended_at"] is None) == (expected.status == "working")
        if expected.priced:
            assert row["cost_usd"] == expected.cost
        elif expected.unpriced_calls:
            assert row["cost_usd"] is None  # unknown, never a misleading zero
        else:
            assert row["cost_usd"] == Decimal(0)


async def test_rebuild_equals_incremental_after_a_random_workload(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    # Small batches, so the runner applies many transactions while the log is written.
    config = ProjectionsConfig(batch_size=37)
    runner = ProjectionRunner(store, SessionState(), config)
    running = asyncio.create_task(runner.run())
    try:
        workload = await append_workload(store, 400, seed=10)
        async with asyncio.timeout(120):
            while True:
                await runner.caught_up.wait()
                position = runner.position
                head = await store.read_all(after=position, limit=1)
                if position is not None and not head:
                    break
                await asyncio.sleep(0.05)
    finally:
        runner.stop()
        await running
    incremental = await rows(superuser)
    check_against_workload(incremental, workload)

    async with await ProjectionConnection.dedicated(store) as connection:
        swapped = await rebuild(store, connection, SessionState(), batch_size=500)
    assert swapped == position
    rebuilt = await rows(superuser)
    assert rebuilt == incremental  # row for row, every column
    stored = await superuser.fetchrow("SELECT * FROM projections WHERE name = 'session_state'")
    assert stored["rebuilt_at"] is not None
    assert stored["global_position"] == position.global_position


async def test_a_rebuild_replaces_rows_that_do_not_follow_from_the_log(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    """The swap is the log's truth: a row nobody's events made and a row someone changed
    both go (before the swap deleted the old rows, the stray row would stay)."""
    workload = await append_workload(store, 20, seed=3)
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, SessionState(), batch_size=7)
    await superuser.execute("UPDATE session_state SET title = 'forged', steps = 999")
    await superuser.execute(
        "INSERT INTO session_state (session_id, created_at, updated_at, last_seq) "
        "VALUES (gen_random_uuid(), now(), now(), 1)"
    )
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, SessionState(), batch_size=7)
    check_against_workload(await rows(superuser), workload)


async def test_rebuilds_while_a_runner_applies_lose_and_double_nothing(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    """A rebuild swaps in under a runner that is applying: the runner's next batch finds the
    position moved, writes nothing, and goes on from the rebuilt position."""
    runner = ProjectionRunner(store, SessionState(), ProjectionsConfig(batch_size=11))
    running = asyncio.create_task(runner.run())
    try:
        writing = asyncio.create_task(append_workload(store, 150, seed=44, concurrency=4))
        while not writing.done():
            async with await ProjectionConnection.dedicated(store) as connection:
                await rebuild(store, connection, SessionState(), batch_size=97)
        workload = await writing
        async with asyncio.timeout(60):
            while await store.read_all(after=runner.position, limit=1) or not (
                runner.caught_up.is_set()
            ):
                await asyncio.sleep(0.05)
    finally:
        runner.stop()
        await running
    check_against_workload(await rows(superuser), workload)


async def test_a_batch_from_a_stale_position_writes_nothing(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    await append_workload(store, 5, seed=1)
    events = await store.read_all()
    projection = SessionState()
    async with await ProjectionConnection.dedicated(store) as connection:
        await connection.register(projection.name, projection.version)
        moved = await connection.apply(projection, events[:10], Position.origin())
        with pytest.raises(PositionMovedError) as raised:
            await connection.apply(projection, events[10:], Position.origin())
        assert raised.value.stored == moved
    assert await superuser.fetchval("SELECT sum(last_seq) FROM session_state") == 10
    stored = await superuser.fetchrow("SELECT * FROM projections")
    assert stored["global_position"] == moved.global_position


async def test_a_rebuild_swapped_in_behind_an_idle_runner_is_caught_up_at_once(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    """A rebuild that read the log before its last events swaps in behind a runner that has
    applied them all and waits for more: told by the swap, the runner applies them again at
    once. Before, it found out only at its next batch, so with no new event the rows stayed
    behind while the runner said it was caught up (the concurrent test above failed so, about
    one run in six on a loaded machine)."""
    workload = await append_workload(store, 20, seed=7)
    events = await store.read_all()
    runner = ProjectionRunner(store, SessionState(), ProjectionsConfig(batch_size=50))
    running = asyncio.create_task(runner.run())
    try:
        async with asyncio.timeout(60):
            while runner.position != events[-1].position or not runner.caught_up.is_set():
                await asyncio.sleep(0.02)
        projection = SessionState()
        early = events[: len(events) // 2]
        async with await ProjectionConnection.dedicated(store) as connection:
            await connection.start_building(projection)
            await connection.build(projection, early)
            await connection.swap_in(projection, early[-1].position, early[-1].created_at)
        stored = "SELECT tx::text::bigint, global_position FROM projections WHERE name = $1"
        # the runner writes its position with the rows, then holds it in memory once the
        # transaction commits: both get there (a loaded machine can run between the two)
        async with asyncio.timeout(30):
            while (
                tuple(await superuser.fetchrow(stored, projection.name)) != events[-1].position
                or runner.position != events[-1].position
            ):
                await asyncio.sleep(0.05)
    finally:
        runner.stop()
        await running
    check_against_workload(await rows(superuser), workload)


async def test_a_rebuild_plans_each_read_of_its_temporary_tables_afresh(
    store: EventStore,
) -> None:
    """The temporary tables a rebuild fills have no statistics, so a cached plan made while
    they were empty would scan them whole at every batch (a 10M-event rebuild took up to 1.8x
    as long: docs/benchmarks.md, "Scale"); while building, every statement is planned for the
    table as it is, and the connection is back to the server's default after the swap."""
    await append_workload(store, 3, seed=11)
    events = await store.read_all()
    projection = SessionState()
    setting = "SELECT current_setting('plan_cache_mode')"
    async with await ProjectionConnection.dedicated(store) as connection:
        raw = connection._connection
        before = await raw.fetchval(setting)
        await connection.register(projection.name, projection.version)
        await connection.start_building(projection)
        await connection.build(projection, events)
        assert await raw.fetchval(setting) == "force_custom_plan"
        await connection.swap_in(projection, events[-1].position, events[-1].created_at)
        assert await raw.fetchval(setting) == before == "auto"
