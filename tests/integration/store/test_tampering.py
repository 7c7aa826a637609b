"""`verify` against an attacker who is the database's superuser.

Each attack is done as such an attacker would: switch the append-only trigger off
(``ALTER TABLE ... DISABLE TRIGGER USER``) or run as a replica
(``session_replication_role = replica``), change rows, and recompute whatever hashes they can
(every event's and the session head). Before signed anchors and the sessions-row and
prompt-message checks, `verify` recomputed the chain only, so each case below passed it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.events import LlmCall, Message
from app.events.canonical import canonical_json, chain_hash
from app.store import EventStore
from app.store.integrity.anchors import AnchorRecord, sign_anchor
from app.store.integrity.verification import session_ids, stored_message_problem


@pytest.fixture
async def attacker(database_url: str, settings) -> AsyncIterator[EventStore]:
    """The database's superuser, with the store's row decoding for convenience."""
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as opened:
        yield opened


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


async def _session(store: EventStore, n: int) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [Message(content=f"m{i}") for i in range(1, n + 1)])
    return session


async def _anchor(store: EventStore, session: uuid.UUID, key: Ed25519PrivateKey) -> AnchorRecord:
    report = await store.verify(session)
    assert report.ok and report.head is not None
    return sign_anchor(key, session, report.checked, bytes.fromhex(report.head))


async def _recompute_chain(attacker: EventStore, session: uuid.UUID) -> None:
    """Re-hash every event of the session and move the head to match: a valid-looking log."""
    async with attacker.pool.acquire() as connection, connection.transaction():
        await connection.execute("SET LOCAL session_replication_role = replica")
        previous = b""
        for event in await attacker.read(session):
            previous = chain_hash(previous, event.hashed_document())
            await connection.execute(
                "UPDATE events SET hash = $1 WHERE session_id = $2 AND seq = $3",
                previous,
                session,
                event.seq,
            )
        await connection.execute(
            "UPDATE sessions SET last_hash = $1, last_seq = $2 WHERE id = $3",
            previous,
            len(await attacker.read(session)),
            session,
        )


async def test_edited_payload_with_recomputed_chain_is_caught_only_with_anchors(
    store: EventStore, attacker: EventStore, key: Ed25519PrivateKey
) -> None:
    session = await _session(store, 5)
    anchor = await _anchor(store, session, key)
    async with attacker.pool.acquire() as connection, connection.transaction():
        await connection.execute("ALTER TABLE events DISABLE TRIGGER USER")
        await connection.execute(
            """UPDATE events SET payload = '{"content": "forged"}' """
            "WHERE session_id = $1 AND seq = 3",
            session,
        )
        await connection.execute("ALTER TABLE events ENABLE TRIGGER USER")
    await _recompute_chain(attacker, session)

    unanchored = await store.verify(session)
    assert unanchored.ok, "a recomputed chain is what anchors exist for"
    report = await store.verify(session, anchors=[anchor], trusted=key.public_key())
    assert not report.ok and report.first_bad_seq == 5
    assert "differs from the signed head" in report.reason


async def test_truncated_tail_with_rewound_head_is_caught_with_anchors(
    store: EventStore, attacker: EventStore, key: Ed25519PrivateKey
) -> None:
    session = await _session(store, 5)
    anchor = await _anchor(store, session, key)
    async with attacker.pool.acquire() as connection, connection.transaction():
        await connection.execute("SET LOCAL session_replication_role = replica")
        await connection.execute("DELETE FROM events WHERE session_id = $1 AND seq > 3", session)
        last = await connection.fetchval(
            "SELECT hash FROM events WHERE session_id = $1 AND seq = 3", session
        )
        await connection.execute(
            "UPDATE sessions SET last_seq = 3, last_hash = $1 WHERE id = $2", last, session
        )

    assert (await store.verify(session)).ok, "a consistent shorter log: only anchors know"
    report = await store.verify(session, anchors=[anchor], trusted=key.public_key())
    assert not report.ok and report.first_bad_seq == 4 and report.checked == 3
    assert "seq 5 was anchored" in report.reason and "log ends at seq 3" in report.reason


async def test_deleted_sessions_row_is_caught_without_anchors(
    store: EventStore, attacker: EventStore
) -> None:
    session = await _session(store, 3)
    await attacker.pool.execute("DELETE FROM sessions WHERE id = $1", session)
    report = await store.verify(session)
    assert not report.ok and "row in the sessions table is missing" in report.reason
    assert report.checked == 3 and report.first_bad_seq is None


async def test_sessions_row_with_another_creation_time_is_caught(
    store: EventStore, attacker: EventStore
) -> None:
    session = await _session(store, 2)
    await attacker.pool.execute(
        "UPDATE sessions SET created_at = created_at - interval '1 day' WHERE id = $1", session
    )
    report = await store.verify(session)
    assert not report.ok and "created at" in report.reason


async def test_deleted_session_is_reported_from_the_anchors(
    store: EventStore, attacker: EventStore, key: Ed25519PrivateKey
) -> None:
    kept, deleted = await _session(store, 2), await _session(store, 4)
    anchors = [await _anchor(store, kept, key), await _anchor(store, deleted, key)]
    async with attacker.pool.acquire() as connection, connection.transaction():
        await connection.execute("SET LOCAL session_replication_role = replica")
        await connection.execute("DELETE FROM events WHERE session_id = $1", deleted)
        await connection.execute("DELETE FROM sessions WHERE id = $1", deleted)

    assert deleted not in await session_ids(store), "nothing in the database remembers it"
    report = await store.verify(deleted, anchors=[anchors[1]], trusted=key.public_key())
    assert not report.ok and "the session is gone" in report.reason
    assert (await store.verify(kept, anchors=[anchors[0]], trusted=key.public_key())).ok


async def test_edited_prompt_message_is_caught_without_anchors(
    store: EventStore, attacker: EventStore
) -> None:
    system = {"role": "system", "content": "be careful"}
    user = {"role": "user", "content": "delete nothing"}
    texts = [canonical_json(system), canonical_json(user)]
    hashes = [_sha256(text) for text in texts]
    await store.put_messages(hashes, texts)
    session = uuid.uuid4()
    call = LlmCall(model="m", fingerprint="f" * 64, prompt=hashes, tools=hashes[0])
    await store.append(session, [Message(content="go"), call])
    before = await store.verify(session)
    assert before.ok and before.messages == 2

    async with attacker.pool.acquire() as connection, connection.transaction():
        await connection.execute("ALTER TABLE llm_messages DISABLE TRIGGER USER")
        await connection.execute(
            """UPDATE llm_messages SET message = '{"role": "user", "content": "delete all"}' """
            "WHERE hash = $1",
            bytes.fromhex(hashes[1]),
        )
        await connection.execute("ALTER TABLE llm_messages ENABLE TRIGGER USER")

    report = await store.verify(session)
    assert (
        not report.ok and hashes[1] in report.reason and "llm_messages was edited" in report.reason
    )
    _, problem = await stored_message_problem(store)
    assert problem is not None and hashes[1] in problem


async def test_deleted_prompt_message_is_caught(store: EventStore, attacker: EventStore) -> None:
    text = canonical_json({"role": "user", "content": "hi"})
    await store.put_messages([_sha256(text)], [text])
    session = uuid.uuid4()
    await store.append(session, [LlmCall(model="m", fingerprint="f", prompt=[_sha256(text)])])
    async with attacker.pool.acquire() as connection, connection.transaction():
        await connection.execute("SET LOCAL session_replication_role = replica")
        await connection.execute("DELETE FROM llm_messages")
    report = await store.verify(session)
    assert not report.ok and "missing from llm_messages" in report.reason


async def test_anchors_signed_by_another_key_are_refused(
    store: EventStore, key: Ed25519PrivateKey
) -> None:
    session = await _session(store, 3)
    forged = await _anchor(store, session, Ed25519PrivateKey.generate())
    report = await store.verify(session, anchors=[forged], trusted=key.public_key())
    assert not report.ok and "not signed by this deployment" in report.reason
    genuine = await _anchor(store, session, key)
    assert (await store.verify(session, anchors=[genuine], trusted=key.public_key())).ok


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def test_a_head_that_would_hide_early_events_is_caught(
    store: EventStore, attacker: EventStore
) -> None:
    """Reads name the months from the head's first event time on (migration 0026); one moved
    later leaves the first events out of every read but verify's, which says so."""
    session = await _session(store, 3)
    await attacker.pool.execute(
        "UPDATE sessions SET first_event_at = first_event_at + interval '1 hour' WHERE id = $1",
        session,
    )
    assert await store.read(session) == []
    report = await store.verify(session)
    assert not report.ok and "reads would leave it out" in report.reason
    assert report.checked == 3
