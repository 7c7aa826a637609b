"""The runner against the real PostgreSQL: version bumps rebuild on start, lag is visible, a
reader with no runner live catches the projection up first, and one runner at a time."""

from __future__ import annotations

import asyncio
import uuid
from typing import ClassVar

import asyncpg
import pytest

from app.config import Settings
from app.events import AgentState, ErrorObservation, Run, SessionCreated
from app.projections import ProjectionRunner, ProjectionsConfig, SessionState, bring_up_to_date
from app.projections.sql.projection_status import projection_status
from app.projections.sql.projection_store import ProjectionConnection, ProjectionRows
from app.sessions.sql.session_rows import ListedState
from app.sessions.summary import recent_sessions
from app.store import EventStore, RecordedEvent
from tests.support.projection_workload import append_workload

QUICK = ProjectionsConfig(standby_interval=0.1, batch_size=50, drain_timeout=2.0)


async def until(condition: asyncio.Event | None = None, *, check=None, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not (await check() if check else condition and condition.is_set()):
            await asyncio.sleep(0.05)


async def caught_up(store: EventStore) -> bool:
    [status] = await projection_status(store, ["session_state"])
    return status.behind == 0 and status.position is not None


class SessionStateV2(SessionState):
    """The same fold under a new version number, as a code change would bump it."""

    version: ClassVar[int] = SessionState.version + 1


async def test_a_version_bump_rebuilds_on_start(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    workload = await append_workload(store, 30, seed=5)
    runner = ProjectionRunner(store, SessionState(), QUICK)
    task = asyncio.create_task(runner.run())
    await until(check=lambda: caught_up(store))
    runner.stop()
    await task
    # A row version 1 got wrong (as a fold's bug would leave it): only a rebuild fixes it,
    # incremental applying never touches a finished session again.
    await superuser.execute("UPDATE session_state SET steps = steps + 100")

    bumped = ProjectionRunner(store, SessionStateV2(), QUICK)
    task = asyncio.create_task(bumped.run())
    try:
        await until(bumped.caught_up)
        stored = await superuser.fetchrow("SELECT * FROM projections WHERE name='session_state'")
        assert stored["version"] == SessionStateV2.version and stored["rebuilt_at"] is not None
        steps = dict(await superuser.fetch("SELECT session_id, steps FROM session_state"))
        assert steps == {s: e.steps for s, e in workload.sessions.items()}
    finally:
        bumped.stop()
        await task

    # Older code finds tables built by newer code: it leaves them alone and says so.
    old = ProjectionRunner(store, SessionState(), QUICK)
    task = asyncio.create_task(old.run())
    await asyncio.sleep(0.5)
    assert old.state == "standby"
    old.stop()
    await task
    assert await superuser.fetchval("SELECT version FROM projections") == SessionStateV2.version


async def test_status_shows_lag_in_events_and_seconds_and_whether_a_runner_is_live(
    store: EventStore,
) -> None:
    [never] = await projection_status(store, ["session_state"])
    assert (never.version, never.position, never.behind, never.live) == (None, None, 0, False)
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="t"), AgentState(state="running")])
    await asyncio.sleep(0.3)
    [behind] = await projection_status(store, ["session_state"])
    assert behind.behind == 2 and behind.lag_seconds >= 0.3 and not behind.live

    runner = ProjectionRunner(store, SessionState(), QUICK)
    task = asyncio.create_task(runner.run())
    try:
        await until(runner.caught_up)
        [live] = await projection_status(store, ["session_state"])
        assert live.live and live.behind == 0 and live.lag_seconds == 0
        assert (
            live.version == SessionState.version
            and live.runner is not None
            and "pid" in live.runner
        )
        assert live.position is not None and live.position == runner.position
    finally:
        runner.stop()
        await task
    [stopped] = await projection_status(store, ["session_state"])
    assert not stopped.live


async def test_a_read_with_no_runner_live_catches_up_first(
    store: EventStore, settings: Settings
) -> None:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="first"), AgentState(state="finished")])
    [listed] = await recent_sessions(store)
    assert (listed.id, listed.state, listed.events) == (session, "finished", 2)
    await store.append(session, [AgentState(state="awaiting_user_input")])
    [listed] = await recent_sessions(store)
    assert (listed.state, listed.events) == ("awaiting_user_input", 3)


async def test_a_read_leaves_applying_to_a_live_runner(store: EventStore) -> None:
    """While another connection holds the projection's lock (a live runner), a reader does
    not apply: two writers of the same rows would both apply."""
    async with await ProjectionConnection.dedicated(store) as holder:
        assert await holder.try_lock("session_state")
        await store.append(uuid.uuid4(), [SessionCreated(title="t")])
        assert await bring_up_to_date(store, SessionState()) is False
        assert await recent_sessions(store) == []  # nothing applied behind the holder's back
    assert await bring_up_to_date(store, SessionState()) is True
    assert len(await recent_sessions(store)) == 1
    async with await ProjectionConnection.dedicated(store) as holder:
        assert await holder.try_lock("session_state")
        # Current: the reader needs no lock (and takes none) to read what is there.
        assert await bring_up_to_date(store, SessionState()) is True


async def test_a_second_runner_stands_by_and_takes_over(
    store: EventStore, app_database_url: str, settings: Settings
) -> None:
    first = ProjectionRunner(store, SessionState(), QUICK)
    first_task = asyncio.create_task(first.run())
    await until(first.caught_up)
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=settings.masker()
    ) as other:
        second = ProjectionRunner(other, SessionState(), QUICK)
        second_task = asyncio.create_task(second.run())
        try:
            await asyncio.sleep(0.5)
            assert (first.state, second.state) == ("applying", "standby")
            first.stop()
            await first_task
            await store.append(uuid.uuid4(), [SessionCreated(title="after the handover")])
            await until(check=lambda: caught_up(other))
            assert second.state == "applying"
            [row] = await recent_sessions(other)
            assert row.title == "after the handover"
        finally:
            second.stop()
            await second_task


@pytest.mark.parametrize("state", ["running", "interrupted"])
async def test_sessions_filters_by_state_model_and_since(
    store: EventStore, state: ListedState
) -> None:
    workload = await append_workload(store, 60, seed=11)
    everything = await recent_sessions(store, 1000)
    assert len(everything) == 60
    working = {s for s, e in workload.sessions.items() if e.status == "working"}
    # Nobody holds a claim: every working session was interrupted, none runs.
    found = {s.id for s in await recent_sessions(store, 1000, state=state)}
    assert found == (working if state == "interrupted" else set())
    finished = {s.id for s in await recent_sessions(store, 1000, state="finished")}
    assert finished == {s for s, e in workload.sessions.items() if e.status == "finished"}
    limit = {s.id for s in await recent_sessions(store, 1000, state="limit")}
    assert limit == {s for s, e in workload.sessions.items() if e.status == "limit"}
    local = {s.id for s in await recent_sessions(store, 1000, model="openai/local")}
    assert local == {s for s, e in workload.sessions.items() if e.model == "openai/local"}
    middle = sorted(everything, key=lambda s: s.created_at)[30].created_at
    since = {s.id for s in await recent_sessions(store, 1000, since=middle)}
    assert since == {s.id for s in everything if s.created_at >= middle}
    assert 0 < len(since) < 60
    newest = await recent_sessions(store, 5)
    assert [s.id for s in newest] == [s.id for s in everything[:5]]


class FailsOnErrors(SessionState):
    """A fold with a bug: it cannot take an ``error`` event."""

    def apply(self, rows: ProjectionRows, event: RecordedEvent) -> None:
        if event.kind == "error":
            raise ValueError(f"cannot fold event {event.seq} of {event.session_id}")
        super().apply(rows, event)


async def test_a_fold_that_fails_stops_the_runner_and_keeps_what_was_applied(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    """Retrying would fail on the same event forever: the runner ends, says why, and the
    position stays before the batch that failed (nothing of it written)."""
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="t"), AgentState(state="running")])
    runner = ProjectionRunner(store, FailsOnErrors(), QUICK)
    task = asyncio.create_task(runner.run())
    await until(runner.caught_up)
    await store.append(session, [Run(command="x"), ErrorObservation(message="could not", cause=3)])
    async with asyncio.timeout(10):
        await runner.ended.wait()
    with pytest.raises(ValueError, match="cannot fold event 4"):
        await task
    assert isinstance(runner.error, ValueError)
    assert await superuser.fetchval("SELECT last_seq FROM session_state") < 4
    failing = await superuser.fetchval("SELECT global_position FROM events WHERE seq = 4")
    assert await superuser.fetchval("SELECT global_position FROM projections") < failing
