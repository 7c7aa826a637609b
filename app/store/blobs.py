"""Blobs: the long strings of payloads, stored once by content hash and referenced from events.

Writing: ``encode_batch`` replaces every string over the threshold by a reference
``{"$blob": "<sha256 hex>", "chars": N}`` (see app/events/stored_form.py); the store puts the
texts through ``chronicle_put_blobs`` (which checks each hash) *before* the append that refers
to them. Putting is idempotent, and a blob left behind by an append that then failed is
harmless: nothing refers to it.

Reading: the store's jsonb decoder tags a payload whose text holds a marker, so a page of
events is walked only where needed, and every blob the page refers to is fetched with one
query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import asyncpg

from app.events.stored_form import (
    EncodedArray,
    EncodedObject,
    StoredFormError,
    references,
    restore,
)
from app.store.errors import StoreError
from app.store.records import RecordedEvent

PUT_BLOBS_SQL = "SELECT chronicle_put_blobs($1::bytea[], $2::text[])"
GET_BLOBS_SQL = "SELECT sha256, content FROM blobs WHERE sha256 = ANY($1::bytea[])"
#: Texts sent in one call (a PostgreSQL message holds at most 1 GB).
PUT_BYTES_PER_CALL = 64 * 1024 * 1024

_payload_of = itemgetter(8)  # RecordedEvent.payload
_ENCODED = (EncodedObject, EncodedArray)


class MissingBlobError(StoreError):
    """An event refers to a blob the blobs table does not have."""


def holds_encoded(events: Sequence[RecordedEvent]) -> bool:
    """Does any event of the page hold markers? (One pass at C speed on the hot path.)"""
    return not set(map(type, map(_payload_of, events))) <= {dict}


async def put_blobs(pool: asyncpg.Pool, blobs: Mapping[str, str]) -> int:
    """Store the texts under their keys (sha256 hex); the number newly stored."""
    inserted = 0
    for chunk in _chunks(blobs):
        keys = [bytes.fromhex(key) for key in chunk]
        inserted += int(await pool.fetchval(PUT_BLOBS_SQL, keys, list(chunk.values())) or 0)
    return inserted


def _chunks(blobs: Mapping[str, str]) -> Iterable[dict[str, str]]:
    chunk: dict[str, str] = {}
    size = 0
    for key, text in blobs.items():
        if chunk and size + len(text) > PUT_BYTES_PER_CALL // 4:
            yield chunk
            chunk, size = {}, 0
        chunk[key] = text
        size += len(text)
    if chunk:
        yield chunk


async def fetch_blobs(pool: asyncpg.Pool, keys: Iterable[str]) -> dict[str, str]:
    """The texts of the blobs that exist among ``keys`` (sha256 hex), in one query."""
    wanted = [bytes.fromhex(key) for key in keys]
    if not wanted:
        return {}
    rows = await pool.fetch(GET_BLOBS_SQL, wanted)
    return {bytes(row["sha256"]).hex(): row["content"] for row in rows}


async def restore_events(pool: asyncpg.Pool, events: list[RecordedEvent]) -> list[RecordedEvent]:
    """The page with every payload that holds markers restored (one query for its blobs)."""
    marked = [i for i, event in enumerate(events) if type(event.payload) in _ENCODED]
    wanted: dict[str, RecordedEvent] = {}
    for i in marked:
        for key in references(events[i].payload):
            wanted.setdefault(key, events[i])
    texts = await fetch_blobs(pool, wanted)
    for key, event in wanted.items():
        if key not in texts:
            raise MissingBlobError(
                f"event {event.seq} of session {event.session_id} refers to blob {key}, which "
                "the blobs table does not have (deleted?); `chronicle verify "
                f"{event.session_id}` checks the session, and reading with "
                "resolve_blobs=False gives its events without blob texts"
            )
    restored = list(events)
    for i in marked:
        event = events[i]
        try:
            payload: Any = restore(event.payload, texts)
        except StoredFormError as exc:
            raise StoreError(
                f"event {event.seq} of session {event.session_id} holds a malformed stored "
                f"payload ({exc}); `chronicle verify {event.session_id}` checks the session"
            ) from None
        restored[i] = event._replace(payload=payload)
    return restored
