"""Asking for another run of an existing session within its owner's cap, in PostgreSQL as
chronicle_app runs it: requests at once never take more places than the cap, a refused one
records nothing, a session that holds a place needs no second one."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from app.events import AgentState, Message, SessionCreated
from app.sessions.sql import session_leases as leases
from app.sessions.sql.capped_runs import RunCapReached, request_run_within_cap
from app.sessions.sql.session_owners import active_sessions, record_owner
from app.sessions.sql.users import add_user
from app.store import EventStore, RecordedEvent


async def ended_session(store: EventStore, owner: uuid.UUID | None) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="t"), AgentState(state="finished")])
    if owner is not None:
        await record_owner(store, session, owner)
    return session


async def age_owner_rows(superuser: asyncpg.Connection) -> None:
    """As if the sessions were created long ago (no projection runs here to say they ended)."""
    await superuser.execute("UPDATE session_owners SET created_at = now() - interval '1 hour'")


def message(
    store: EventStore, session: uuid.UUID, text: str
) -> Callable[[], Awaitable[list[RecordedEvent]]]:
    return lambda: store.append(session, [Message(content=text, source="user")])


async def test_requests_at_once_take_no_more_places_than_the_cap(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    owner = (await add_user(store, "mallory")).id
    sessions = [await ended_session(store, owner) for _ in range(6)]
    await age_owner_rows(superuser)
    assert await active_sessions(store, owner) == 0

    async def wake(session: uuid.UUID) -> bool:
        try:
            await request_run_within_cap(
                store, session, cap=2, reason="message", record=message(store, session, "go")
            )
        except RunCapReached as exc:
            assert (exc.active, exc.cap) == (2, 2)
            return False
        return True

    woken = await asyncio.gather(*(wake(session) for session in sessions))
    assert sorted(woken) == [False] * 4 + [True] * 2
    assert await active_sessions(store, owner) == 2
    leased = {row["session_id"] for row in await store.pool.fetch("SELECT * FROM session_leases")}
    assert leased == {s for s, ok in zip(sessions, woken, strict=True) if ok}
    for session, ok in zip(sessions, woken, strict=True):
        kinds = [event.kind for event in await store.read(session)]
        assert kinds.count("message") == (1 if ok else 0)  # a refused request recorded nothing


async def test_a_session_holding_a_place_is_asked_again_at_the_cap(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    owner = (await add_user(store, "ada")).id
    working = await ended_session(store, owner)
    other = await ended_session(store, owner)
    await age_owner_rows(superuser)
    await request_run_within_cap(
        store, working, cap=1, reason="message", record=message(store, working, "first")
    )
    lease = await leases.claim_next(store, "w1", 30)
    assert lease is not None and lease.session_id == working
    # the running session takes a second message; another session has no place
    await request_run_within_cap(
        store, working, cap=1, reason="message", record=message(store, working, "second")
    )
    with pytest.raises(RunCapReached, match="has 1 sessions working already"):
        await request_run_within_cap(
            store, other, cap=1, reason="resume", record=message(store, other, "no")
        )
    # once the run is released, its place is free again
    assert await leases.release(store, lease, "ended") == "requeued"  # asked again meanwhile
    await superuser.execute("DELETE FROM session_leases")
    await request_run_within_cap(
        store, other, cap=1, reason="resume", record=message(store, other, "now")
    )


async def test_a_session_without_an_owner_has_no_cap(store: EventStore) -> None:
    session = await ended_session(store, None)
    for text in ("one", "two"):
        await request_run_within_cap(
            store, session, cap=1, reason="message", record=message(store, session, text)
        )
    assert await store.pool.fetchval("SELECT count(*) FROM session_leases") == 1
