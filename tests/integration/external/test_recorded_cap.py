"""A session ``chronicle record`` runs says ``running`` (so the page lists it live) but no
worker runs it: it never takes a place of its owner's cap of working sessions, while its
command runs nor after its process was killed before it could record the end."""

from __future__ import annotations

import uuid

from app.events import AgentState
from app.external.sessions import external_session
from app.projections import SessionState, rebuild
from app.projections.sql.projection_store import ProjectionConnection
from app.sessions.sql.session_owners import active_sessions, record_owner
from app.sessions.sql.users import add_user
from app.store import EventStore


async def test_a_recorded_session_that_says_running_takes_no_place(store: EventStore) -> None:
    user = await add_user(store, "rec")
    session = uuid.uuid4()
    await record_owner(store, session, user.id)
    created = external_session(title="aider", user="rec", user_agent=None)
    await store.append(session, [created, AgentState(state="running", source="agent")])
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, SessionState(), batch_size=50)
    assert await active_sessions(store, user.id) == 0
