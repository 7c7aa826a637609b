"""Which session a gateway call goes to, in PostgreSQL as chronicle_app runs it: a name opens
one session however many calls race to open it (from two API processes), a token without a
header has a session of its own, a session of another user or of Chronicle's own agent is
refused, a token scoped to one session stays in it, and sessions of external calls never
count against their owner's cap of working sessions."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.events import SessionCreated
from app.external.errors import GatewayError
from app.external.session_scope import scope_label
from app.external.sessions import SessionChooser, token_session_id
from app.projections import SessionState, rebuild
from app.projections.sql.projection_store import ProjectionConnection
from app.sessions.sql.session_owners import active_sessions, owner_of, record_owner
from app.sessions.sql.users import Principal, add_user
from app.store import EventStore

AIDER = "aider/0.80.1 litellm/1.60"


async def principal(store: EventStore, name: str, label: str = "") -> Principal:
    user = await add_user(store, name)
    return token_of(user.id, name, label)


def token_of(user_id: uuid.UUID, name: str, label: str = "") -> Principal:
    return Principal(
        user_id=user_id, name=name, is_admin=False, token_id=uuid.uuid4(), token_kind="api",
        expires_at=None, label=label,
    )  # fmt: skip


async def test_a_name_opens_one_session_however_many_calls_race(store: EventStore) -> None:
    ada = await principal(store, "ada")
    processes = [SessionChooser(store), SessionChooser(store)]
    chosen = await asyncio.gather(
        *(processes[i % 2].session_for(ada, "my run", AIDER) for i in range(8))
    )
    assert len(set(chosen)) == 1
    log = await store.read(chosen[0])
    assert [event.kind for event in log] == ["session.created"]
    assert log[0].payload["title"] == "my run"
    assert log[0].payload["config"]["agent"] == "external"
    assert log[0].payload["config"]["client"] == "aider/0.80.1"
    assert log[0].payload["config"]["user_agent"] == AIDER
    assert await owner_of(store, chosen[0]) == ada.user_id
    # by its UUID it is the same session; another user's name of the same words is another
    assert await processes[0].session_for(ada, str(chosen[0]), AIDER) == chosen[0]
    bob = await principal(store, "bob")
    assert await SessionChooser(store).session_for(bob, "my run", AIDER) != chosen[0]


async def test_without_a_header_each_token_has_a_session_of_its_own(store: EventStore) -> None:
    ada = await principal(store, "ada")
    again = token_of(ada.user_id, "ada")
    chooser = SessionChooser(store)
    first = await chooser.session_for(ada, None, None)
    assert first == token_session_id(ada.token_id)
    assert await chooser.session_for(ada, "  ", None) == first
    assert await chooser.session_for(again, None, None) not in (first, None)
    assert (await store.read(first))[0].payload["config"]["client"] == "unknown"


async def test_a_session_not_the_users_or_not_external_is_refused(store: EventStore) -> None:
    ada = await principal(store, "ada")
    bob = await principal(store, "bob")
    chooser = SessionChooser(store)
    bobs = await chooser.session_for(bob, "private", AIDER)
    with pytest.raises(GatewayError) as refused:
        await chooser.session_for(ada, str(bobs), AIDER)
    assert refused.value.status == 404
    native = uuid.uuid4()
    await store.append(native, [SessionCreated(title="t", config={"agent": "CodeActAgent"})])
    await record_owner(store, native, ada.user_id)
    with pytest.raises(GatewayError) as refused:
        await chooser.session_for(ada, str(native), AIDER)
    assert refused.value.status == 409
    with pytest.raises(GatewayError) as refused:
        await chooser.session_for(ada, "bad\nname", AIDER)
    assert refused.value.status == 400
    assert await store.last_seq(native) == 1  # nothing was added to it


async def test_a_scoped_token_stays_in_its_session(store: EventStore) -> None:
    ada = await principal(store, "ada")
    chooser = SessionChooser(store)
    recorded = await chooser.session_for(ada, "recorded", AIDER)
    scoped = token_of(ada.user_id, "ada", scope_label(recorded))
    assert await chooser.session_for(scoped, None, AIDER) == recorded
    assert await chooser.session_for(scoped, str(recorded), AIDER) == recorded
    with pytest.raises(GatewayError) as refused:
        await chooser.session_for(scoped, "elsewhere", AIDER)
    assert refused.value.status == 403


async def test_external_sessions_do_not_count_against_the_cap(store: EventStore) -> None:
    ada = await principal(store, "ada")
    chooser = SessionChooser(store)
    for name in ("one", "two", "three"):
        await chooser.session_for(ada, name, AIDER)
    never_ran = uuid.uuid4()  # a session of Chronicle's own agent that no worker ran yet
    await store.append(never_ran, [SessionCreated(title="t", config={"agent": "CodeActAgent"})])
    await record_owner(store, never_ran, ada.user_id)
    async with await ProjectionConnection.dedicated(store) as connection:
        await rebuild(store, connection, SessionState(), batch_size=50)
    assert await active_sessions(store, ada.user_id) == 1
