"""Session leases in PostgreSQL: requests, SKIP LOCKED claims, heartbeats, expiry, release,
and the workers list, as the application's login (chronicle_app) runs them."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from app.config import Settings
from app.events import SessionCreated
from app.sessions.sql import session_leases as leases
from app.store import EventStore


async def new_session(store: EventStore) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="t")])
    return session


async def expire(superuser: asyncpg.Connection, session: uuid.UUID) -> None:
    """As if the lease's worker died a while ago (the clock cannot be moved; the row can)."""
    await superuser.execute(
        "UPDATE session_leases SET lease_expires_at = now() - interval '1 second' "
        "WHERE session_id = $1",
        session,
    )


async def test_a_request_is_idempotent_and_rings_workers(
    store: EventStore, app_login: asyncpg.Connection
) -> None:
    session = await new_session(store)
    rung: list[str] = []
    await app_login.add_listener(leases.CHANNEL, lambda *args: rung.append(args[-1]))
    assert await leases.request_run(store, session, "message") == "requested"
    assert await leases.request_run(store, session, "message") == "waiting"
    assert await store.pool.fetchval("SELECT count(*) FROM session_leases") == 1
    async with asyncio.timeout(5):
        while not rung:
            await asyncio.sleep(0.05)
    assert rung == [str(session)]  # once: the second request queued nothing
    lease = await leases.claim_next(store, "w1", 30)
    assert lease is not None and lease.session_id == session and lease.reason == "message"
    # A running session is not requested twice: still one row, still w1's.
    assert await leases.request_run(store, session, "message") == "running"
    row = await store.pool.fetchrow("SELECT owner, lease_id FROM session_leases")
    assert row is not None and row["owner"] == "w1" and row["lease_id"] == lease.lease_id
    assert await leases.claim_next(store, "w2", 30) is None


async def test_an_unknown_session_is_refused(store: EventStore) -> None:
    with pytest.raises(leases.UnknownSessionError, match="does not exist"):
        await leases.request_run(store, uuid.uuid4(), "message")


async def test_two_concurrent_claimers_never_take_the_same_session(
    store: EventStore, app_database_url: str, settings: Settings
) -> None:
    sessions = [await new_session(store) for _ in range(6)]
    for session in sessions:
        await leases.request_run(store, session, "message")
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=settings.masker()
    ) as other:
        # Each claimer in its own process-like store; rows one holds locked are skipped by
        # the other (SKIP LOCKED), never waited on, never handed out twice.
        async def claim_all(claimer: EventStore, name: str) -> list[uuid.UUID]:
            got = []
            while (lease := await leases.claim_next(claimer, name, 30)) is not None:
                got.append(lease.session_id)
            return got

        first, second = await asyncio.gather(claim_all(store, "a"), claim_all(other, "b"))
    assert sorted(first + second) == sorted(sessions)
    assert not set(first) & set(second)


async def test_a_locked_row_is_skipped_not_waited_on(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    older, newer = await new_session(store), await new_session(store)
    await leases.request_run(store, older, "message")
    await leases.request_run(store, newer, "message")
    async with superuser.transaction():
        # Another claimer is between its SELECT ... FOR UPDATE and its commit on `older`.
        await superuser.execute(
            "SELECT 1 FROM session_leases WHERE session_id = $1 FOR UPDATE", older
        )
        async with asyncio.timeout(5):  # would block until the commit without SKIP LOCKED
            lease = await leases.claim_next(store, "w", 30)
    assert lease is not None and lease.session_id == newer


async def test_an_expired_lease_is_taken_over_and_the_old_holder_is_refused(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    session = await new_session(store)
    await leases.request_run(store, session, "message")
    first = await leases.claim_next(store, "dead-worker", 30)
    assert first is not None and first.attempts == 1 and first.taken_over_from is None
    assert await leases.heartbeat(store, first, 30)
    assert await leases.claim_next(store, "w2", 30) is None  # held, not expired
    await expire(superuser, session)
    second = await leases.claim_next(store, "w2", 30)
    assert second is not None and second.session_id == session
    assert second.taken_over_from == "dead-worker" and second.attempts == 2
    assert second.lease_id != first.lease_id
    # The first holder, back from a stall: its heartbeat and its release are refused.
    assert not await leases.heartbeat(store, first, 30)
    assert await leases.release(store, first, "ended") == "not_held"
    assert await leases.heartbeat(store, second, 30)
    assert await leases.release(store, second, "ended") == "released"
    assert await store.pool.fetchval("SELECT count(*) FROM session_leases") == 0


async def test_a_heartbeat_extends_the_lease(store: EventStore) -> None:
    session = await new_session(store)
    await leases.request_run(store, session, "message")
    lease = await leases.claim_next(store, "w", 2)
    assert lease is not None
    before = await store.pool.fetchval("SELECT lease_expires_at FROM session_leases")
    assert await leases.heartbeat(store, lease, 60)
    after = await store.pool.fetchval("SELECT lease_expires_at FROM session_leases")
    assert (after - before).total_seconds() > 50
    due = (await leases.lease_outlook(store, worker_id=None)).seconds_until_due
    assert due is not None and 55 < due <= 60


async def test_the_outlook_says_whether_another_worker_holds_a_lease(store: EventStore) -> None:
    """A worker imports its model client ahead of a takeover only when a session runs on
    another worker: its own sessions, and runs nobody holds yet, are not a takeover."""
    assert await leases.lease_outlook(store, worker_id="w") == (None, False)
    first = await new_session(store)
    await leases.request_run(store, first, "message")
    waiting = await leases.lease_outlook(store, worker_id="w")
    assert waiting == (0, False)  # claimable now, and nobody holds it
    lease = await leases.claim_next(store, "w", 60)
    assert lease is not None
    own = await leases.lease_outlook(store, worker_id="w")
    assert own.held_elsewhere is False
    assert own.seconds_until_due is not None and 55 < own.seconds_until_due <= 60
    assert (await leases.lease_outlook(store, worker_id="other")).held_elsewhere is True
    assert (await leases.lease_outlook(store, worker_id=None)).held_elsewhere is True
    assert await leases.release(store, lease, "ended") == "released"
    assert await leases.lease_outlook(store, worker_id="other") == (None, False)


async def test_a_request_during_a_run_survives_its_release(store: EventStore) -> None:
    """A message posted as the agent ends: the run's release keeps the row for another run."""
    session = await new_session(store)
    await leases.request_run(store, session, "message")
    lease = await leases.claim_next(store, "w", 30)
    assert lease is not None
    assert await leases.request_run(store, session, "another message") == "running"
    assert await leases.release(store, lease, "ended") == "requeued"
    again = await leases.claim_next(store, "w", 30)
    assert again is not None and again.reason == "another message" and again.attempts == 1
    assert await leases.release(store, again, "ended") == "released"


async def test_handed_back_waits_for_retry_after(store: EventStore) -> None:
    session = await new_session(store)
    await leases.request_run(store, session, "message")
    lease = await leases.claim_next(store, "w", 30)
    assert lease is not None
    assert await leases.release(store, lease, "handed_back", retry_after=60) == "requeued"
    assert await leases.claim_next(store, "w2", 30) is None  # not before a minute
    row = await store.pool.fetchrow("SELECT owner, attempts FROM session_leases")
    assert row is not None and row["owner"] is None and row["attempts"] == 0
    assert await leases.request_run(store, session, "message") == "waiting"
    assert await store.pool.fetchval("SELECT count(*) FROM session_leases") == 1


async def test_a_drained_session_is_claimable_at_once(store: EventStore) -> None:
    session = await new_session(store)
    await leases.request_run(store, session, "message")
    lease = await leases.claim_next(store, "draining", 30)
    assert lease is not None
    assert await leases.release(store, lease, "handed_back") == "requeued"
    assert (await leases.lease_outlook(store, worker_id=None)).seconds_until_due == 0
    taken = await leases.claim_next(store, "other", 30)
    assert taken is not None and taken.session_id == session and taken.taken_over_from is None


async def test_workers_present(store: EventStore, superuser: asyncpg.Connection) -> None:
    for worker in ("w1", "w2"):
        await leases.worker_seen(
            store, worker_id=worker, host="h", pid=1, role="worker", running=0, capacity=4,
            forget_after=600,
        )  # fmt: skip
    await leases.worker_seen(
        store, worker_id="w1", host="h", pid=1, role="worker", running=2, capacity=4,
        forget_after=600,
    )  # fmt: skip
    present = await leases.present_workers(store, seen_within=60)
    assert [(w.worker_id, w.running) for w in present] == [("w1", 2), ("w2", 0)]
    await superuser.execute(
        "UPDATE workers SET last_seen_at = now() - interval '2 minutes' WHERE worker_id = 'w2'"
    )
    assert [w.worker_id for w in await leases.present_workers(store, seen_within=60)] == ["w1"]
    await leases.worker_gone(store, "w1")
    assert [w.worker_id for w in await leases.present_workers(store, seen_within=600)] == ["w2"]


async def test_the_application_changes_leases_only_through_the_functions(
    store: EventStore, app_login: asyncpg.Connection, superuser: asyncpg.Connection
) -> None:
    session = await new_session(store)
    await leases.request_run(store, session, "message")
    for statement in (
        "UPDATE session_leases SET owner = 'thief', lease_id = gen_random_uuid()",
        "DELETE FROM session_leases",
        "INSERT INTO workers VALUES ('x', 'h', 1, 'worker', now(), now(), 0, 0)",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_login.execute(statement)
    rows = await superuser.fetch(
        "SELECT p.proname, pg_get_userbyid(p.proowner) AS owner, p.prosecdef, p.proconfig "
        "FROM pg_proc p WHERE p.proname LIKE 'chronicle\\_%run' OR p.proname LIKE "
        "'chronicle\\_worker\\_%'"
    )
    assert len(rows) == 6
    for row in rows:
        assert row["owner"] == "chronicle_owner" and row["prosecdef"], row["proname"]
        assert row["proconfig"] == ["search_path=pg_catalog, public, pg_temp"], row["proname"]
    owners = await superuser.fetch(
        "SELECT tableowner FROM pg_tables WHERE tablename IN ('session_leases', 'workers')"
    )
    assert [row["tableowner"] for row in owners] == ["chronicle_owner"] * 2
