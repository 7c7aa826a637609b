"""Redacting a part of one event: its content goes, its place in the chain stays provable, and
a ``redaction`` event records who, when, why and what by hash (docs/erasure.md).

The new payload is made here (``app.events.commitment.redact``: the part replaced by its
marker) and checked by the database (``chronicle_redact``: the same tree commitment, an event
hashed over it), which replaces the payload and appends the record in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

import asyncpg

from app.events.canonical import stored_json
from app.events.commitment import redact as redacted_payload
from app.events.redaction import Redaction
from app.events.stored_form import REDACTED
from app.store.append import encode_batch
from app.store.errors import StoreError
from app.store.records import RecordedEvent

if TYPE_CHECKING:
    from app.store.event_store import EventStore

REDACT_SQL = (
    "SELECT seq, global_position, tx, created_at, hash "
    "FROM chronicle_redact($1::uuid, $2::integer, $3::text, $4::uuid, $5::text, $6::smallint)"
)


class RedactionRefused(StoreError):
    """The database refused the redaction; the message says why (an event recorded before
    redaction was possible, say)."""


async def redact(
    store: EventStore, session_id: UUID, seq: int, path: str, *, reason: str, user: str
) -> RecordedEvent:
    """Remove the part at ``path`` (a JSON Pointer, "" the whole payload) of the session's
    event ``seq``; the ``redaction`` event recorded. ``RedactionPathError`` for a path that
    names nothing, ``RedactionRefused`` when the database refuses."""
    page = await store.read(session_id, after_seq=seq - 1, limit=1, resolve_blobs=False)
    if not page or page[0].seq != seq:
        raise RedactionRefused(f"session {session_id} has no event {seq}")
    target = page[0]
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
    try:
        row = await store.pool.fetchrow(
            REDACT_SQL,
            session_id,
            seq,
            stored_json(payload),
            record.event_id,
            batch.payload_texts[0],
            record.schema_version,
        )
    except asyncpg.PostgresError as exc:
        if getattr(exc, "sqlstate", None) in ("CR020", "CR021"):
            hint = getattr(exc, "hint", None)
            raise RedactionRefused(f"{exc}" + (f" ({hint})" if hint else "")) from None
        raise StoreError(f"the database refused the redaction: {exc}") from None
    assert row is not None
    store.notifier.recheck(str(session_id))
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
