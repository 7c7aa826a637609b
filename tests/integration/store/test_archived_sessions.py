"""An archived session in the database: its head row records the archive, takes no more
events, and `verify` tells events that left with their month from events that vanished.

What detaching a month does to a session's events is done here by the superuser (triggers
off), so the test runs whether or not ``events`` is partitioned: the database's side of the
rule is the same.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.events import AgentState, Message, SessionCreated
from app.store import EventStore, StoreError
from app.store.archive import ArchiveRaceError, archived_sessions, mark_archived
from app.store.integrity import sign_anchor

MANIFEST = hashlib.sha256(b"manifest").digest()


async def _session(store: EventStore) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(
        session,
        [SessionCreated(title="t"), Message(content="hi"), AgentState(state="finished")],
        expected_seq=0,
    )
    return session


async def _head(store: EventStore, session: uuid.UUID) -> tuple[int, bytes]:
    [last] = await store.read(session, after_seq=2)
    return last.seq, last.hash


async def _mark(store: EventStore, heads: dict[uuid.UUID, tuple[int, bytes]]) -> list[str]:
    renamed: list[str] = []
    await mark_archived(
        store,
        heads,
        archived_at=datetime.now(UTC),
        archived_by="cli:operator",
        archived_to="/archives/2026-11",
        manifest_sha256=MANIFEST,
        before_commit=lambda: renamed.append("renamed"),
    )
    return renamed


async def _remove_events(superuser: asyncpg.Connection, session: uuid.UUID, *seqs: int) -> None:
    """What detaching a month does to the session's events in it."""
    async with superuser.transaction():
        await superuser.execute("SET LOCAL session_replication_role = replica")
        await superuser.execute(
            "DELETE FROM events WHERE session_id = $1 AND seq = ANY($2::int[])", session, seqs
        )


async def test_archived_events_gone_verify_as_archived_others_as_tampered(
    store: EventStore, owner_store: EventStore, superuser: asyncpg.Connection
) -> None:
    archived, partly, plain = [await _session(store) for _ in range(3)]
    heads = {session: await _head(store, session) for session in (archived, partly)}
    assert await _mark(owner_store, heads) == ["renamed"]
    assert await archived_sessions(store) == {archived, partly}

    whole = await store.verify(archived)
    assert whole.ok and whole.archived is not None
    assert (whole.archived.events, whole.archived.events_here) == (3, 3)
    assert whole.archived.manifest == MANIFEST.hex()
    assert whole.archived.archived_to == "/archives/2026-11"

    await _remove_events(superuser, archived, 1, 2, 3)
    await _remove_events(superuser, partly, 1)
    await _remove_events(superuser, plain, 1, 2, 3)
    gone = await store.verify(archived)
    assert gone.ok, gone.reason
    assert gone.archived is not None and gone.archived.events_here == 0
    assert gone.head == heads[archived][1].hex()
    half = await store.verify(partly)
    assert half.ok and half.archived is not None and half.archived.events_here == 2
    tampered = await store.verify(plain)
    assert not tampered.ok and "no events" in tampered.reason

    # an import cannot fill the gap of a session still partly here; the whole one comes back
    with pytest.raises(asyncpg.PostgresError, match="2 of its 3 events are still here"):
        await superuser.fetchval(
            "SELECT chronicle_restore_archived($1, $2, $3)", partly, *heads[partly]
        )
    with pytest.raises(asyncpg.PostgresError, match="another head"):
        await superuser.fetchval(
            "SELECT chronicle_restore_archived($1, $2, $3)", archived, 3, b"\x01" * 32
        )

    # anchors: the archived head is what an anchor of it must name
    key = Ed25519PrivateKey.generate()
    good = sign_anchor(key, archived, 3, heads[archived][1])
    assert (await store.verify(archived, anchors=[good], trusted=key.public_key())).ok
    forged = sign_anchor(key, archived, 3, b"\x01" * 32)
    beyond = sign_anchor(key, archived, 4, heads[archived][1])
    for record in (forged, beyond):
        report = await store.verify(archived, anchors=[record], trusted=key.public_key())
        assert not report.ok and "another head" in report.reason


async def test_an_archived_session_takes_no_more_events(
    store: EventStore, owner_store: EventStore, superuser: asyncpg.Connection
) -> None:
    session = await _session(store)
    await _mark(owner_store, {session: await _head(store, session)})
    with pytest.raises(StoreError, match="is archived"):
        await store.append(session, [Message(content="more")])
    # nor can its record be rewritten to point elsewhere, even by the owner
    with pytest.raises(asyncpg.PostgresError, match="is archived"):
        await superuser.execute(
            "UPDATE sessions SET archived_to = '/elsewhere' WHERE id = $1", session
        )


async def test_a_session_that_grew_is_not_marked_and_nothing_is_renamed(
    store: EventStore, owner_store: EventStore
) -> None:
    first, second = await _session(store), await _session(store)
    heads = {session: await _head(store, session) for session in (first, second)}
    await store.append(second, [Message(content="one more")])
    renamed: list[str] = []
    with pytest.raises(ArchiveRaceError, match=f"session {second} grew"):
        await mark_archived(
            owner_store,
            heads,
            archived_at=datetime.now(UTC),
            archived_by="cli:operator",
            archived_to="/archives/x",
            manifest_sha256=MANIFEST,
            before_commit=lambda: renamed.append("renamed"),
        )
    assert renamed == [] and await archived_sessions(store) == set()
