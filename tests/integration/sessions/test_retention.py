"""Retention policies (app/sessions/retention.py): which ended sessions each policy names (by
age, owner, tag, evaluation run), archive first when it says so, erase under a signed
tombstone; a running session is skipped; a person's erasure takes their sessions and their
name, and keeps the record (docs/erasure.md)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.config import Settings
from app.config.groups import RetentionConfig, RetentionPolicy
from app.events import AgentState, Message, SessionCreated
from app.events.annotation import Annotation
from app.events.platform_audit import PLATFORM_LOG_ID
from app.events.session_config import EvaluationTrial, SessionConfig
from app.sessions.person_erasure import PersonNotErased, erase_person
from app.sessions.platform_audit import Actor, user_changed
from app.sessions.retention import apply_policy, apply_retention, due, retention_upkeep
from app.sessions.sql.users import add_user, find_user
from app.store import EventStore, tombstones
from app.store.archive import check_directory

KEY = Ed25519PrivateKey.generate()
ACTOR = Actor(name="cli:ops", via="cli")
#: Later than every event here: each policy's age has passed.
LATER = datetime.now(UTC) + timedelta(days=10)


def quiet(text: str, *, steady: bool = False) -> None:
    return None


async def _ended(
    store: EventStore, *, title: str = "t", run: str | None = None, state: str = "finished"
) -> uuid.UUID:
    session = uuid.uuid4()
    config = SessionConfig(evaluation=EvaluationTrial(run=run)) if run else SessionConfig()
    await store.append(
        session,
        [
            SessionCreated(title=title, config=config),
            Message(content=title),
            AgentState(state=state),
        ],
    )
    return session


async def test_each_filter_names_its_sessions(
    owner_store: EventStore, superuser: asyncpg.Connection
) -> None:
    store = owner_store
    ann = await add_user(store, f"ann-{uuid.uuid4().hex[:6]}")
    owned, tagged, trial, plain = (await _ended(store) for _ in range(1)), None, None, None
    owned = await _ended(store)
    await superuser.execute(
        "INSERT INTO session_owners (session_id, user_id) VALUES ($1, $2)", owned, ann.id
    )
    tagged = await _ended(store)
    await store.append(tagged, [Annotation(label="note", tags=["pii"], user="bob")])
    trial = await _ended(store, run="nightly-7")
    plain = await _ended(store)
    running = await _ended(store, state="running")

    def names(**filters: object) -> RetentionPolicy:
        return RetentionPolicy(name="p", after_days=1, **filters)  # type: ignore[arg-type]

    everything = set(await due(store, names(), LATER))
    assert {owned, tagged, trial, plain} <= everything and running not in everything
    assert await due(store, names(), datetime.now(UTC)) == []  # not old enough yet
    assert await due(store, names(users=(ann.name,)), LATER) == [owned]
    assert await due(store, names(tags=("pii", "other")), LATER) == [tagged]
    assert await due(store, names(evaluation_runs=("nightly-7",)), LATER) == [trial]
    assert trial in await due(store, names(evaluation_runs=("*",)), LATER)
    assert await due(store, names(users=(ann.name,), tags=("pii",)), LATER) == []


async def test_a_policy_archives_then_erases(owner_store: EventStore, tmp_path: Path) -> None:
    store = owner_store
    session = await _ended(store, run=f"run-{uuid.uuid4().hex[:6]}")
    run = (await store.read(session))[0].payload["config"]["evaluation_run"]
    policy = RetentionPolicy(
        name="trials-30d", after_days=1, evaluation_runs=(run,), archive_to=tmp_path
    )
    done = await apply_policy(store, policy, key=KEY, actor=ACTOR, progress=quiet, now=LATER)
    assert [e.tombstone.session_id for e in done.erased] == [session] and not done.skipped
    assert done.archived_to is not None and done.archived_to.parent == tmp_path
    assert check_directory(done.archived_to, KEY.public_key()).ok
    report = await store.verify(session, trusted=KEY.public_key())
    assert report.ok and report.erased is not None and report.erased.policy == "trials-30d"
    assert await store.read(session) == []
    again = await apply_policy(store, policy, key=KEY, actor=ACTOR, progress=quiet, now=LATER)
    assert again.erased == [] and again.chosen == []


async def test_a_running_session_is_skipped_and_one_round_runs_at_a_time(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    session = await _ended(store, run=f"run-{uuid.uuid4().hex[:6]}")
    run = (await store.read(session))[0].payload["config"]["evaluation_run"]
    await superuser.execute(
        "INSERT INTO session_leases (session_id, reason) VALUES ($1, 'resume')", session
    )
    policy = RetentionPolicy(name="p", after_days=1, evaluation_runs=(run,))
    # a lease row: not ended, so not even chosen
    assert await due(store, policy, LATER) == []
    await superuser.execute("SELECT pg_advisory_lock(1129, 29)")
    try:
        assert (
            await apply_retention(
                store, RetentionConfig(policies=(policy,)), key=KEY, actor=ACTOR, progress=quiet
            )
            is None
        )
    finally:
        await superuser.execute("SELECT pg_advisory_unlock(1129, 29)")


async def test_a_person_is_erased_with_their_sessions_and_name(
    owner_store: EventStore, superuser: asyncpg.Connection
) -> None:
    store = owner_store
    name = f"grace-{uuid.uuid4().hex[:6]}"
    user = await add_user(store, name)
    await user_changed(store, ACTOR, name, "added", is_admin=False)
    mine, theirs = await _ended(store, title=f"by {name}"), await _ended(store)
    await superuser.execute(
        "INSERT INTO session_owners (session_id, user_id) VALUES ($1, $2)", mine, user.id
    )
    await store.append(theirs, [Annotation(label="reviewed", user=name)])
    await superuser.execute(
        "INSERT INTO session_leases (session_id, reason) VALUES ($1, 'resume')", mine
    )
    with pytest.raises(PersonNotErased, match="it is running"):
        await erase_person(store, name, key=KEY, actor=ACTOR, progress=quiet)
    assert await find_user(store, name) is not None  # nothing of the person changed
    await superuser.execute("DELETE FROM session_leases WHERE session_id = $1", mine)

    done = await erase_person(store, name, key=KEY, actor=ACTOR, progress=quiet)
    assert [e.tombstone.session_id for e in done.sessions.erased] == [mine]
    assert done.renamed_to == f"erased-{user.id.hex[:12]}" and done.redacted >= 2
    assert not done.kept
    assert await find_user(store, name) is None
    for table in ("users", "api_tokens", "browser_logins", "events", "sessions", "session_state"):
        text = await superuser.fetchval(
            f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {table} t"
        )
        assert name not in text, table
    for session in (theirs, PLATFORM_LOG_ID):
        assert (await store.verify(session)).ok
    [record] = [e for e in await store.read(PLATFORM_LOG_ID) if e.kind == "audit.user_erased"]
    assert record.payload["user_id"] == str(user.id) and record.payload["sessions"] == 1


async def test_the_runner_applies_the_policies_in_rounds(
    store: EventStore, database_url: str, settings: Settings
) -> None:
    run = f"run-{uuid.uuid4().hex[:6]}"
    session = await _ended(store, run=run)
    policy = RetentionPolicy(name="rounds", after_days=1e-5, evaluation_runs=(run,))
    configured = settings.model_copy(
        update={
            "database_url": database_url,
            "retention": RetentionConfig(policies=(policy,), interval=0.2),
        }
    )
    await asyncio.sleep(1.0)  # past the policy's age (under a second)
    stop = asyncio.Event()
    [upkeep] = retention_upkeep(configured)
    task = asyncio.create_task(upkeep(stop))
    try:
        async with asyncio.timeout(30):
            while not await tombstones(store, [session]):
                await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    [stone] = await tombstones(store, [session])
    assert (stone.policy, stone.erased_by) == ("rounds", "chronicle:retention")
    assert retention_upkeep(settings) == []  # no policy: nothing runs
