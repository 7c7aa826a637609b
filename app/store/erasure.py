"""Erasing a whole session: its events go, a signed tombstone and the platform's record stay.

What a retention policy, or a person's request, asks for (docs/erasure.md). In one
transaction:

1. ``chronicle_erase_session`` writes the tombstone into the session's ``sessions`` row (its
   number of events and last hash, who, when, which policy, signed with the anchor key) and
   deletes its events, keys, run requests and received spans;
2. the platform log records ``audit.session_erased`` with the same tombstone, so a tombstone
   without its record, or a session gone with neither, is caught by ``verify``;
3. each blob and prompt message the session named that no other event names any more is
   deleted (``chronicle_forget``).

The usage rollups are brought up to date first: the aggregates a policy keeps (tokens and
cost by day, model, session and user) are counted before the events go, and the database
refuses the erasure otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel

from app.events import Event
from app.events.platform_audit import (
    PLATFORM_LOG_ID,
    AuditSessionErased,
    Via,
    platform_log_created,
)
from app.events.stored_form import references
from app.store.append import APPEND_ONE_SQL, encode_batch
from app.store.archive.checker import named_messages
from app.store.errors import StoreError
from app.store.integrity.tombstones import Tombstone, sign_tombstone

if TYPE_CHECKING:
    from app.store.event_store import EventStore

HEAD_SQL = "SELECT last_seq, last_hash, erased_at, erased_by FROM sessions WHERE id = $1"
ERASE_SQL = (
    "SELECT chronicle_erase_session($1::uuid, $2::integer, $3::bytea, $4::timestamptz, "
    "$5::text, $6::text, $7::text, $8::text)"
)
REFRESH_SQL = "SELECT counted, caught_up FROM chronicle_refresh_usage_rollups($1)"
FORGET_SQL = "SELECT chronicle_forget($1::text, $2::bytea)"
TOMBSTONES_SQL = """
SELECT session_id, last_seq, last_hash, erased_at, erased_by, policy, key_id, signature
FROM session_tombstones {where} ORDER BY erased_at, session_id
"""
#: Calls the rollups count per refresh while an erasure waits for them.
REFRESH_CALLS = 10_000
READ_PAGE = 1000


class ErasureRefused(StoreError):
    """The session cannot be erased (none such, already erased, the platform log, or it grew
    while the erasure was prepared); the message says which."""


class ErasedSession(BaseModel):
    """What an erasure did: the tombstone left, and what went."""

    tombstone: Tombstone
    events_deleted: int
    blobs_deleted: int
    messages_deleted: int


async def erase_session(
    store: EventStore,
    session_id: UUID,
    *,
    key: Ed25519PrivateKey,
    actor: str,
    via: Via,
    policy: str,
    address: str | None = None,
) -> ErasedSession:
    """Erase ``session_id`` under ``policy`` (see the module's docstring)."""
    if session_id == PLATFORM_LOG_ID:
        raise ErasureRefused("the platform's audit log is never erased")
    head = await store.pool.fetchrow(HEAD_SQL, session_id)
    if head is None:
        raise ErasureRefused(f"there is no session {session_id}")
    if head["erased_at"] is not None:
        raise ErasureRefused(
            f"session {session_id} was erased already (at {head['erased_at']}, by "
            f"{head['erased_by']})"
        )
    await _count_usage(store)
    blobs, messages = await _named_content(store, session_id)
    tombstone = sign_tombstone(
        key,
        session_id,
        head["last_seq"],
        bytes(head["last_hash"]),
        erased_by=actor,
        policy=policy,
    )
    record = AuditSessionErased(
        actor=actor,
        via=via,
        address=address,
        session_id=session_id,
        events=tombstone.last_seq,
        last_hash=tombstone.last_hash,
        erased_at=tombstone.erased_at,
        policy=policy,
        key_id=tombstone.key_id,
        signature=tombstone.signature,
    )
    await ensure_platform_log(store)
    async with store.pool.acquire() as connection, connection.transaction():
        try:
            deleted = await connection.fetchval(
                ERASE_SQL,
                session_id,
                tombstone.last_seq,
                bytes.fromhex(tombstone.last_hash),
                tombstone.erased_at,
                tombstone.erased_by,
                tombstone.policy,
                tombstone.key_id,
                tombstone.signature,
            )
        except asyncpg.PostgresError as exc:
            if getattr(exc, "sqlstate", None) in ("CR022", "CR023"):
                hint = getattr(exc, "hint", None)
                raise ErasureRefused(f"{exc}" + (f" ({hint})" if hint else "")) from None
            raise StoreError(f"the database refused the erasure: {exc}") from None
        await append_within(store, connection, PLATFORM_LOG_ID, record)
        blobs_deleted = await _forget(connection, "blob", blobs)
        messages_deleted = await _forget(connection, "message", messages)
    store.notifier.recheck(str(PLATFORM_LOG_ID))
    return ErasedSession(
        tombstone=tombstone,
        events_deleted=int(deleted or 0),
        blobs_deleted=blobs_deleted,
        messages_deleted=messages_deleted,
    )


async def tombstones(store: EventStore, session_ids: list[UUID] | None = None) -> list[Tombstone]:
    """The erased sessions' tombstones (of ``session_ids``, or all), oldest first."""
    if session_ids is None:
        rows = await store.pool.fetch(TOMBSTONES_SQL.format(where=""))
    else:
        rows = await store.pool.fetch(
            TOMBSTONES_SQL.format(where="WHERE session_id = ANY($1::uuid[])"), session_ids
        )
    return [_tombstone(row) for row in rows]


def _tombstone(row: Any) -> Tombstone:
    return Tombstone(
        session_id=row["session_id"],
        last_seq=row["last_seq"],
        last_hash=bytes(row["last_hash"]).hex(),
        erased_at=row["erased_at"],
        erased_by=row["erased_by"],
        policy=row["policy"],
        key_id=row["key_id"],
        signature=row["signature"],
    )


async def ensure_platform_log(store: EventStore) -> None:
    """The platform log's first event, recorded once whoever appends it first."""
    if await store.last_seq(PLATFORM_LOG_ID) == 0:
        await store.append(PLATFORM_LOG_ID, [platform_log_created()])


async def append_within(store: EventStore, connection: Any, session_id: UUID, event: Event) -> None:
    """Append one small event inside the caller's transaction (a record that must commit, or
    not, with what it records). Its payload must fit without blobs."""
    batch = encode_batch(
        [event],
        store.config.max_event_bytes,
        store.masker,
        blob_threshold=store.config.blob_threshold_bytes,
    )
    if batch.blobs:
        raise StoreError(f"a {event.kind} record too large to append with what it records")
    await connection.fetchrow(
        APPEND_ONE_SQL,
        session_id,
        None,
        batch.event_ids[0],
        batch.kinds[0],
        batch.sources[0],
        batch.causes[0],
        batch.payload_texts[0],
        batch.versions[0],
        True,
    )


async def _count_usage(store: EventStore) -> None:
    """Bring the usage rollups up to what every reader can see (the session's calls among
    them: it is read after this, and the database checks)."""
    while True:
        row = await store.pool.fetchrow(REFRESH_SQL, REFRESH_CALLS)
        if row is None or row["caught_up"]:
            return


async def _named_content(store: EventStore, session_id: UUID) -> tuple[set[str], set[str]]:
    """The blobs and the prompt messages (and tool lists) the session's events name."""
    blobs: set[str] = set()
    messages: set[str] = set()
    after = 0
    while True:
        page = await store.read(
            session_id, after_seq=after, limit=READ_PAGE, resolve_blobs=False, trust_head=False
        )
        for event in page:
            stored = event.stored_payload
            blobs |= references(stored)
            if event.kind == "llm.call":
                messages.update(named_messages(stored))
        if len(page) < READ_PAGE:
            return blobs, messages
        after = page[-1].seq


async def _forget(connection: Any, kind: str, keys: set[str]) -> int:
    """Delete each of ``keys`` that no event names any more; how many went."""
    gone = 0
    for key in sorted(keys):
        if await connection.fetchval(FORGET_SQL, kind, bytes.fromhex(key)):
            gone += 1
    return gone
