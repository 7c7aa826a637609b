"""Erasing a whole session (migration 0030, app/store/erasure.py): its events, blobs and prompt
messages go, a signed tombstone and the platform log's record stay, ``verify`` reports the
erasure (with anchors too), and a session deleted, or a tombstone edited, behind the log's back
is still caught."""

from __future__ import annotations

import hashlib
import uuid

import asyncpg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.events import LlmCall, Message, RunOutput, SessionCreated
from app.events.canonical import canonical_json
from app.events.platform_audit import PLATFORM_LOG_ID
from app.store import ErasureRefused, EventStore, erase_session, tombstones
from app.store.integrity.anchors import sign_anchor

SECRET = "the-erased-content-7f3a9c"


async def _recorded(store: EventStore, shared: list[str]) -> uuid.UUID:
    session = uuid.uuid4()
    own = canonical_json({"role": "user", "content": f"only here {SECRET}"})
    key = hashlib.sha256(own.encode()).hexdigest()
    await store.put_messages([key], [own])
    await store.append(
        session,
        [
            SessionCreated(title=f"title {SECRET}"),
            Message(content=SECRET),
            RunOutput(output=SECRET * 10_000, exit_code=0),  # a blob of its own
            LlmCall(model="m", fingerprint="f" * 64, prompt=[*shared, key]),
        ],
    )
    return session


async def test_an_erased_session_leaves_its_tombstone_and_nothing_else(
    store: EventStore, database_url: str
) -> None:
    key = Ed25519PrivateKey.generate()
    shared_text = canonical_json({"role": "system", "content": "kept by another session"})
    shared = [hashlib.sha256(shared_text.encode()).hexdigest()]
    await store.put_messages(shared, [shared_text])
    erased, kept = await _recorded(store, shared), uuid.uuid4()
    await store.append(kept, [LlmCall(model="m", fingerprint="f" * 64, prompt=shared)])
    head = (await store.read(erased))[-1]
    anchor = sign_anchor(key, erased, head.seq, head.hash)

    done = await erase_session(
        store, erased, key=key, actor="cli:ops", via="cli", policy="older-than-90d"
    )
    assert (done.events_deleted, done.blobs_deleted, done.messages_deleted) == (4, 1, 1)
    assert done.tombstone.last_seq == 4 and done.tombstone.last_hash == head.hash.hex()
    assert [t.session_id for t in await tombstones(store)] == [erased]

    report = await store.verify(erased, anchors=[anchor], trusted=key.public_key())
    assert report.ok and report.erased is not None, report
    assert report.erased.signature_checked and report.erased.policy == "older-than-90d"
    assert (await store.verify(kept)).ok  # the shared prompt message stayed
    [record] = [e for e in await store.read(PLATFORM_LOG_ID) if e.kind == "audit.session_erased"]
    assert record.payload["signature"] == done.tombstone.signature

    admin = await asyncpg.connect(database_url)
    try:
        for table in ("events", "blobs", "llm_messages", "event_ids", "sessions"):
            text = await admin.fetchval(
                f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {table} t"
            )
            assert SECRET not in text, table
        assert await admin.fetchval("SELECT count(*) FROM llm_messages") == 1
    finally:
        await admin.close()

    with pytest.raises(ErasureRefused, match="erased already"):
        await erase_session(store, erased, key=key, actor="ops", via="cli", policy="again")
    with pytest.raises(Exception, match="erased"):
        await store.append(erased, [Message(content="after")], expected_seq=4)


async def test_what_verify_still_catches(store: EventStore, database_url: str) -> None:
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    erased, deleted = await _recorded(store, []), await _recorded(store, [])
    heads = {s: (await store.read(s))[-1] for s in (erased, deleted)}
    await erase_session(store, erased, key=key, actor="ops", via="cli", policy="p")

    # a tombstone signed by another key is not the deployment's
    report = await store.verify(erased, trusted=other.public_key())
    assert not report.ok and "not the trusted key" in report.reason
    # an anchor past the signed head: events went that the tombstone does not account for
    beyond = sign_anchor(key, erased, 9, b"\x01" * 32)
    report = await store.verify(erased, anchors=[beyond], trusted=key.public_key())
    assert not report.ok and "tombstone says the session had 4 events" in report.reason

    admin = await asyncpg.connect(database_url)
    try:
        # a session deleted behind the log's back, as a superuser with the triggers off
        await admin.execute("SET session_replication_role = replica")
        await admin.execute("DELETE FROM events WHERE session_id = $1", deleted)
        await admin.execute("DELETE FROM sessions WHERE id = $1", deleted)
        anchor = sign_anchor(key, deleted, 4, heads[deleted].hash)
        report = await store.verify(deleted, anchors=[anchor], trusted=key.public_key())
        assert not report.ok and "the session is gone" in report.reason
        # a tombstone whose platform record was deleted, or which was edited
        await admin.execute(
            "DELETE FROM events WHERE session_id = $1 AND kind = 'audit.session_erased'",
            PLATFORM_LOG_ID,
        )
        report = await store.verify(erased, trusted=key.public_key())
        assert not report.ok and "no audit.session_erased record" in report.reason
        await admin.execute("UPDATE sessions SET erased_policy = 'other' WHERE id = $1", erased)
        report = await store.verify(erased, trusted=key.public_key())
        assert not report.ok and "forged or edited tombstone" in report.reason
    finally:
        await admin.close()


async def test_an_erasure_is_refused_for_the_platform_log_and_unknown_sessions(
    store: EventStore,
) -> None:
    key = Ed25519PrivateKey.generate()
    with pytest.raises(ErasureRefused, match="never erased"):
        await erase_session(store, PLATFORM_LOG_ID, key=key, actor="o", via="cli", policy="p")
    with pytest.raises(ErasureRefused, match="no session"):
        await erase_session(store, uuid.uuid4(), key=key, actor="o", via="cli", policy="p")


async def test_a_redaction_is_copied_to_the_platform_log(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, [Message(content=SECRET)])
    [record] = await store.redact(session, 1, "/content", reason="pasted", user="cli:ops")
    [copy] = [e for e in await store.read(PLATFORM_LOG_ID) if e.kind == "audit.redaction"]
    assert copy.payload["session_id"] == str(session)
    assert (copy.payload["target_seq"], copy.payload["recorded_seq"]) == (1, record.seq)
    assert copy.payload["removed"] == record.payload["removed"]
    assert (copy.payload["actor"], copy.payload["via"]) == ("cli:ops", "cli")
    assert (await store.verify(PLATFORM_LOG_ID)).ok


async def test_a_redaction_reaches_the_copies_replays_and_forks_made(store: EventStore) -> None:
    source, replay, fork, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await store.append(source, [SessionCreated(title="t"), Message(content=SECRET)])
    await store.append(
        replay,
        [SessionCreated(title="t", replay_of=source), Message(content=SECRET, replayed_from=2)],
    )
    await store.append(
        fork,
        [
            SessionCreated(title="t", forked_from=source, forked_at=2),
            Message(content=f"{SECRET} and more", replayed_from=2),
        ],
    )
    await store.append(other, [SessionCreated(title="t"), Message(content=SECRET, replayed_from=2)])
    records = await store.redact(source, 2, "/content", reason="pasted", user="ops")
    assert sorted((r.session_id, r.payload["target_seq"]) for r in records) == sorted(
        [(source, 2), (replay, 2), (fork, 2)]
    )
    assert "a copy of seq 2 of session" in records[1].payload["reason"]
    for session in (source, replay, fork):
        assert (await store.read(session))[1].payload["content"] == "[redacted]"
        assert (await store.verify(session)).ok
    assert (await store.read(other))[1].payload["content"] == SECRET  # no copy of it
