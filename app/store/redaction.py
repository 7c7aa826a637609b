"""Redacting a part of one event: its content goes, its place in the chain stays provable, and
a ``redaction`` event records who, when, why and what by hash (docs/erasure.md).

The new payload is made here (``app.events.commitment.redact``: the part replaced by its
marker) and checked by the database (``chronicle_redact``: the same tree commitment, an event
hashed over it), which replaces the payload and appends the record in one transaction.

Content stored once and named by hash goes too: a blob the part referred to, or a prompt
message (or tool list) of an ``llm.call``'s part. Another event may name the same content
(a blob is shared by equal long strings, a message by every call that sent it, in any
session), so every event that names it has that reference redacted as well, each with its own
record saying why, and then the row is deleted (``chronicle_forget``, which refuses while any
event still names it).

An event appended before migration 0029 (chain 1) can only go whole (``app.events.chain``): a
part of one is refused, unless the caller asked for the whole payload in its place
(``whole_if_needed``: the value search and the removal of stored-once content, which must
take a reference wherever it is), and then the record's reason says so.

A replay or a fork copies the events it serves into its own session (``replayed_from``): the
same part of each copy is redacted too, with its own record.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg

from app.events.canonical import stored_json
from app.events.commitment import RedactionPathError, part_at, pointers_to, strings_in
from app.events.commitment import redact as redacted_payload
from app.events.platform_audit import PLATFORM_LOG_ID, AuditRedaction
from app.events.redaction import MAX_REASON, Redaction
from app.events.stored_form import BLOB, ESC, REDACTED, references
from app.store.append import encode_batch
from app.store.archive.checker import named_messages
from app.store.erasure import append_within, ensure_platform_log
from app.store.errors import StoreError
from app.store.records import RecordedEvent

if TYPE_CHECKING:
    from app.store.event_store import EventStore

FORGET_SQL = "SELECT chronicle_forget($1::text, $2::bytea)"
log = logging.getLogger(__name__)

#: The copies of a session's event: the events ``replayed_from`` it in the sessions that
#: replay or fork it (a native replay's ``replay_of``, an external agent's ``config.replay_of``,
#: a fork's ``forked_from``).
COPIES_SQL = """
SELECT e.session_id, e.seq FROM events e
WHERE e.payload ->> 'replayed_from' = $2::text
  AND e.session_id IN (
      SELECT c.session_id FROM events c
      WHERE c.seq = 1 AND c.kind = 'session.created'
        AND $1::text IN (c.payload ->> 'replay_of', c.payload ->> 'forked_from',
                         c.payload -> 'config' ->> 'replay_of'))
ORDER BY e.session_id, e.seq
"""
#: The events that name a blob or a prompt message (every month: a reference anywhere counts).
NAMING_SQL = {
    "blob": (
        "SELECT session_id, seq FROM events "
        "WHERE strpos(payload::text, '\"' || $1::text || '\"') > 0"
    ),
    "message": (
        "SELECT session_id, seq FROM events WHERE kind = 'llm.call' "
        "AND (payload -> 'prompt' ? $1::text OR payload ->> 'tools' = $1::text)"
    ),
}
REDACT_SQL = (
    "SELECT seq, global_position, tx, created_at, hash "
    "FROM chronicle_redact($1::uuid, $2::integer, $3::text, $4::uuid, $5::text, $6::smallint)"
)


class RedactionRefused(StoreError):
    """The database refused the redaction; the message says why (an event recorded before
    redaction was possible, say)."""


async def redact(
    store: EventStore,
    session_id: UUID,
    seq: int,
    path: str,
    *,
    reason: str,
    user: str,
    whole_if_needed: bool = False,
) -> list[RecordedEvent]:
    """Remove the part at ``path`` (a JSON Pointer, "" the whole payload) of the session's
    event ``seq``, and the blobs and prompt messages it named wherever they are named; the
    ``redaction`` events recorded, this one first. ``RedactionPathError`` for a path that
    names nothing, ``RedactionRefused`` when the database refuses or the event can only go
    whole (see the module)."""
    target = await _event(store, session_id, seq)
    records = await _redact_following(
        store, target, path, reason=reason, user=user, whole_if_needed=whole_if_needed
    )
    for copy_session, copy_seq in await store.pool.fetch(COPIES_SQL, str(session_id), str(seq)):
        records += await _redact_copy(
            store, copy_session, copy_seq, path, origin=(session_id, seq), reason=reason, user=user
        )
    return records


async def _redact_copy(
    store: EventStore,
    session_id: UUID,
    seq: int,
    path: str,
    *,
    origin: tuple[UUID, int],
    reason: str,
    user: str,
) -> list[RecordedEvent]:
    """The same part of a replay's or a fork's copy of the redacted event (and of copies of
    that copy), where it still holds something: a copy is the same content."""
    why = f"{reason} (a copy of seq {origin[1]} of session {origin[0]}, which was redacted)"
    try:
        return await redact(
            store,
            session_id,
            seq,
            path,
            reason=why[:MAX_REASON],
            user=user,
            whole_if_needed=True,
        )
    except RedactionPathError:  # not there in the copy, or gone already
        return []
    except RedactionRefused as exc:  # an archived copy: its archive is its record
        log.warning("the copy at seq %d of session %s stays: %s", seq, session_id, exc)
        return []


async def redact_where(
    store: EventStore,
    session_id: UUID,
    seq: int,
    matches: Any,
    *,
    reason: str,
    user: str,
    following: bool = True,
    whole_if_needed: bool = False,
) -> list[RecordedEvent]:
    """Redact each part of the event for which ``matches(stored node)`` holds, one at a
    time (each changes the payload, so it is read again until nothing matches); with
    ``following``, what each part names goes too (as ``redact``). The records made.
    Without ``following`` (a reference to content stored once, which must go wherever it
    is) an event that can only go whole goes whole, as with ``whole_if_needed``."""
    records: list[RecordedEvent] = []
    while True:
        event = await _event(store, session_id, seq)
        found = pointers_to(event.stored_payload, matches)
        if not found:
            return records
        whole = {"whole_if_needed": whole_if_needed or not following}
        if following:
            records += await _redact_following(
                store, event, found[0], reason=reason, user=user, **whole
            )
        else:
            records.append(
                await _redact_one(store, event, found[0], reason=reason, user=user, **whole)
            )


async def _redact_following(
    store: EventStore,
    target: RecordedEvent,
    path: str,
    *,
    reason: str,
    user: str,
    whole_if_needed: bool = False,
) -> list[RecordedEvent]:
    """``redact`` of an event already read (what follows is what ``path`` named, even when
    the whole payload went in its place)."""
    part = part_at(target.stored_payload, path)
    records = [
        await _redact_one(
            store, target, path, reason=reason, user=user, whole_if_needed=whole_if_needed
        )
    ]
    named = [("blob", key) for key in sorted(references(part))]
    if target.kind == "llm.call":
        named += [("message", key) for key in sorted(_message_keys(target.stored_payload, path))]
    for kind, key in named:
        why = (
            f"{reason} (the same {kind} {key[:12]}... was redacted with seq {target.seq} of "
            f"session {target.session_id})"
        )
        records += await forget_everywhere(store, kind, key, reason=why, user=user)
    return records


def _message_keys(payload: Any, path: str) -> set[str]:
    """The prompt messages and tool list named in an ``llm.call``'s part at ``path`` (the
    whole payload, its ``prompt``, one entry of it, or its ``tools``)."""
    return set(named_messages(payload)) & set(strings_in(part_at(payload, path)))


async def forget_everywhere(
    store: EventStore, kind: str, key: str, *, reason: str, user: str
) -> list[RecordedEvent]:
    """Redact every reference to a blob or message, then delete it."""
    records: list[RecordedEvent] = []
    for row in await store.pool.fetch(NAMING_SQL[kind], key):
        records += await redact_where(
            store, row["session_id"], row["seq"], _names(kind, key),
            reason=reason, user=user, following=False,
        )  # fmt: skip
    if not await store.pool.fetchval(FORGET_SQL, kind, bytes.fromhex(key)):
        raise RedactionRefused(f"the {kind} {key} is still named by an event after its redaction")
    return records


def _names(kind: str, key: str) -> Any:
    """Whether a stored node is a reference to that blob (or an escaped string held in it),
    or that prompt message's hash."""

    def matches(node: Any) -> bool:
        if kind == "message":
            return node == key
        if isinstance(node, dict) and set(node) == {ESC} and isinstance(node[ESC], dict):
            node = node[ESC]
        return isinstance(node, dict) and node.get(BLOB) == key

    return matches


def _audit_copy(record: Redaction, session_id: UUID, recorded_seq: int) -> AuditRedaction:
    """The platform log's copy of a session's ``redaction`` record (``cli:<login>`` is who ran
    ``chronicle`` on the host; any other user name came through the API)."""
    return AuditRedaction(
        actor=record.user or "unknown",
        via="cli" if (record.user or "").startswith("cli:") else "api",
        session_id=session_id,
        target_seq=record.target_seq,
        path=record.path,
        removed=record.removed,
        recorded_seq=recorded_seq,
        reason=record.reason,
    )


async def _event(store: EventStore, session_id: UUID, seq: int) -> RecordedEvent:
    page = await store.read(session_id, after_seq=seq - 1, limit=1, resolve_blobs=False)
    if not page or page[0].seq != seq:
        raise RedactionRefused(f"session {session_id} has no event {seq}")
    return page[0]


async def _hashed_over_its_text(store: EventStore, target: RecordedEvent) -> bool:
    """Was the event appended before migration 0029 (chain 1)? (The database checks it too.)"""
    previous = b""
    if target.seq > 1:
        page = await store.read(
            target.session_id, after_seq=target.seq - 2, limit=1, resolve_blobs=False
        )
        if not page or page[0].seq != target.seq - 1:
            return False  # archived away: the database says
        previous = page[0].hash
    return target.chain(previous) == 1


async def _redact_one(
    store: EventStore,
    target: RecordedEvent,
    path: str,
    *,
    reason: str,
    user: str,
    whole_if_needed: bool = False,
) -> RecordedEvent:
    session_id, seq = target.session_id, target.seq
    if path and await _hashed_over_its_text(store, target):
        if not whole_if_needed:
            raise RedactionRefused(
                f"event {seq} of session {session_id} was recorded before migration 0029: its "
                f"hash covers its payload's text, so {path} cannot go alone, only the whole "
                "payload (omit --field; the redaction then proves the event's place in the "
                "chain, not what was removed)"
            )
        reason = (
            f"{reason} (the whole payload, in place of {path}: the event was recorded before "
            "migration 0029, so no part of it can go alone)"
        )
        path = ""
    payload, marker = redacted_payload(target.stored_payload, path, target.event_id.bytes)
    record = Redaction(
        target_seq=seq,
        path=path,
        removed=marker[REDACTED],
        was=marker["was"],  # type: ignore[arg-type]  # one of commitment.TYPES
        reason=reason,
        user=user,
    )
    batch = encode_batch(
        [record],
        store.config.max_event_bytes,
        store.masker,
        blob_threshold=store.config.blob_threshold_bytes,
    )
    await ensure_platform_log(store)
    try:
        async with store.pool.acquire() as connection, connection.transaction():
            row = await connection.fetchrow(
                REDACT_SQL,
                session_id,
                seq,
                stored_json(payload),
                record.event_id,
                batch.payload_texts[0],
                record.schema_version,
            )
            assert row is not None
            await append_within(
                store, connection, PLATFORM_LOG_ID, _audit_copy(record, session_id, row["seq"])
            )
    except asyncpg.PostgresError as exc:
        # CR020/CR021: not a redaction the chain allows; CR017: the session is archived (its
        # archive is its record, and it takes no record); CR022: it was erased
        if getattr(exc, "sqlstate", None) in ("CR017", "CR020", "CR021", "CR022"):
            hint = getattr(exc, "hint", None)
            raise RedactionRefused(f"{exc}" + (f" ({hint})" if hint else "")) from None
        raise StoreError(f"the database refused the redaction: {exc}") from None
    store.notifier.recheck(str(session_id))
    store.notifier.recheck(str(PLATFORM_LOG_ID))
    return RecordedEvent(
        global_position=row["global_position"],
        session_id=session_id,
        seq=row["seq"],
        event_id=record.event_id,
        tx=int(row["tx"]),
        kind=record.kind,
        source=record.source,
        cause=None,
        payload=batch.payloads[0],
        schema_version=record.schema_version,
        created_at=row["created_at"],
        hash=bytes(row["hash"]),
    )
