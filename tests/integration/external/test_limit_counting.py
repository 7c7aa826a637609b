"""The gateway's limits counted in PostgreSQL as chronicle_app runs them: two API processes
reserving calls of one session at once never pass its call cap, a recorded cost closes a
cost cap, refusals are recorded, the application's login cannot lift a user's limits, and a
session's limits cannot be changed by a later header."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from app.config import GatewayLimitDefaults, GatewayLimits, Settings
from app.external.errors import GatewayError
from app.external.limit_guard import Admission, LimitGuard
from app.external.sessions import SessionChooser
from app.external.sql.gateway_limits import UserLimits, set_user_limits, usage_of
from app.llm import LlmConfig, LlmGateway
from app.sessions.sql.users import Principal, add_user
from app.store import EventStore

HELLO = [{"role": "user", "content": "hello"}]


async def principal(store: EventStore, name: str) -> Principal:
    user = await add_user(store, name)
    return Principal(
        user_id=user.id, name=name, is_admin=False, token_id=uuid.uuid4(), token_kind="api",
        expires_at=None, label="",
    )  # fmt: skip


def gateway(store: EventStore) -> LlmGateway:
    return LlmGateway(store, LlmConfig(model="openai/scripted", native_tool_calling=True))


async def admit(guard: LimitGuard, store: EventStore, session: uuid.UUID) -> Admission | str:
    try:
        return await guard.admit(session, gateway(store), HELLO, [], {}, stream=False)
    except GatewayError as refused:
        return str(refused.code)


async def test_two_processes_never_pass_a_session_call_cap(
    store: EventStore, app_database_url: str, settings: Settings
) -> None:
    ada = await principal(store, "ada")
    session = await SessionChooser(store).session_for(ada, "raced", None, "max_calls=7")
    other = await EventStore.open(app_database_url, config=settings.store, masker=settings.masker())
    try:
        guards = [(LimitGuard(store, GatewayLimitDefaults()), store)]
        guards.append((LimitGuard(other, GatewayLimitDefaults()), other))
        results = await asyncio.gather(
            *(admit(guards[i % 2][0], guards[i % 2][1], session) for i in range(24))
        )
    finally:
        await other.close()
    assert sum(isinstance(r, Admission) for r in results) == 7
    assert results.count("insufficient_quota") == 17
    used = await usage_of(store, ("session", session))
    assert used is not None and used.calls == 7
    log = await store.read(session)
    refused = [e.payload for e in log if e.kind == "llm.call"]
    assert len(refused) == 17
    assert {(p["error_kind"], p["attempts"], p["cost_usd"]) for p in refused} == {
        ("refused", 0, 0.0)
    }


async def test_a_recorded_cost_closes_the_users_cost_cap(store: EventStore) -> None:
    bob = await principal(store, "bob")
    session = await SessionChooser(store).session_for(bob, "budget", None)
    guard = LimitGuard(store, GatewayLimitDefaults(user=GatewayLimits(max_cost_usd=0.01)))
    admitted = await admit(guard, store, session)
    assert isinstance(admitted, Admission)
    await admitted.spent(0.004)  # under the cap: the next call goes, and overshoots it
    second = await admit(guard, store, session)
    assert isinstance(second, Admission)
    await second.spent(0.007)
    assert await admit(guard, store, session) == "insufficient_quota"
    used = await usage_of(store, ("user", bob.user_id))
    assert used is not None and used.calls == 2 and used.cost_usd == pytest.approx(0.011)


async def test_the_applications_login_cannot_lift_a_users_limits(store: EventStore) -> None:
    cy = await principal(store, "cy")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await set_user_limits(store, cy.user_id, UserLimits(max_calls=10**9))


async def test_a_sessions_limits_are_those_it_was_opened_with(store: EventStore) -> None:
    dee = await principal(store, "dee")
    chooser = SessionChooser(store)
    session = await chooser.session_for(dee, "fixed", None, "max_calls=3; rate=60")
    assert await chooser.session_for(dee, "fixed", None, "rate=60; max_calls=3") == session
    assert await chooser.session_for(dee, "fixed", None) == session  # no header: as opened
    for later in (SessionChooser(store), chooser):  # another process too
        with pytest.raises(GatewayError) as refused:
            await later.session_for(dee, "fixed", None, "max_calls=300")
        assert refused.value.status == 409 and "'max_calls': 3" in refused.value.message
    with pytest.raises(GatewayError) as wrong:
        await chooser.session_for(dee, "other", None, "max_calls=-1")
    assert wrong.value.status == 400


async def test_a_sessions_own_limits_cannot_loosen_the_deployments(store: EventStore) -> None:
    eve = await principal(store, "eve")
    chooser = SessionChooser(store)
    loose = await chooser.session_for(eve, "loose", None, "max_calls=50; models=*")
    defaults = GatewayLimitDefaults(session=GatewayLimits(max_calls=1, models=("other-*",)))
    guard = LimitGuard(store, defaults)
    assert await admit(guard, store, loose) == "model_not_allowed"  # the default's models
    guard = LimitGuard(store, GatewayLimitDefaults(session=GatewayLimits(max_calls=1)))
    assert isinstance(await admit(guard, store, loose), Admission)
    assert await admit(guard, store, loose) == "insufficient_quota"  # the default's cap
