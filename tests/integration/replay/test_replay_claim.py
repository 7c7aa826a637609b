"""A running replay holds its session's claim, as a live run does, so the session list shows
it ``running`` while it runs and ``finished`` after (before, a replay held no claim and was
listed as ``interrupted`` until it ended). Real PostgreSQL; the replay is held still inside
its first model call, so "while it runs" is a fixed point, not a race."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest

from app.projections import SessionState, rebuild
from app.projections.sql.projection_store import ProjectionConnection
from app.replay import replay
from app.replay.gateway import ReplayGateway
from app.sessions.sql.session_rows import SessionRow, list_sessions
from app.sessions.summary import shown_state
from app.store import EventStore, claimed_sql
from tests.support.waiting import until
from tests.support.written_sessions import Recorder


async def _row(store: EventStore, session: UUID) -> SessionRow | None:
    """The session's row in the session list, with ``session_state`` brought up to date."""
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, SessionState(), batch_size=500)
    rows = await list_sessions(store, limit=50)
    return next((row for row in rows if row.session_id == session), None)


async def _shown(store: EventStore, session: UUID) -> str | None:
    row = await _row(store, session)
    return None if row is None else shown_state(row.status, row.claimed)


async def _is_shown(store: EventStore, session: UUID, state: str) -> bool:
    return await _shown(store, session) == state


async def test_a_running_replay_is_listed_running_then_finished(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(store)
    await recorder.start()
    await recorder.state("running")
    [run] = await recorder.call(("execute_bash", {"command": "pytest -q"}))
    await recorder.output(run, "1 passed")
    await recorder.call(("finish", {"message": "done"}))
    await recorder.state("finished", "the agent called finish")

    # The replay stops inside its second model call until the test lets it go on: by then
    # its first step is recorded and the replay session is working.
    inside: asyncio.Queue[UUID] = asyncio.Queue()
    go_on = asyncio.Event()
    complete = ReplayGateway.complete

    async def held(self: ReplayGateway, session_id: UUID, *args: Any, **kwargs: Any) -> Any:
        if self.progress.served == 1:
            await inside.put(session_id)
            await go_on.wait()
        return await complete(self, session_id, *args, **kwargs)

    monkeypatch.setattr(ReplayGateway, "complete", held)
    replaying = asyncio.create_task(replay(store, recorder.session))
    try:
        replay_id = await asyncio.wait_for(inside.get(), timeout=60)
        claimed = await store.pool.fetchval(f"SELECT {claimed_sql('$1::uuid')}", replay_id)
        assert claimed is True
        # The replay writes its log in batches, at most FLUSH_AFTER seconds behind.
        await until(
            lambda: _is_shown(store, replay_id, "running"),
            timeout=30,
            what="the held replay to be listed running",
        )
    finally:
        go_on.set()
    result = await asyncio.wait_for(replaying, timeout=60)
    assert result.matched and result.session_id == replay_id
    claimed = await store.pool.fetchval(f"SELECT {claimed_sql('$1::uuid')}", replay_id)
    assert claimed is False
    assert await _shown(store, replay_id) == "finished"
