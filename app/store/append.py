"""Append: validate and encode a batch in Python, record it with one database call.

The database functions (see migrations) do the parts that must be serialised per session:
the lock, the expected-seq check, seq numbering, the hash chain and the notification. One
event goes through chronicle_append_one() (scalar arguments), a batch through
chronicle_append(); both take ``p_notify`` (see coalescer.py for who asks for it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, NamedTuple, Protocol
from uuid import UUID

import asyncpg

from app.events import Event, InvalidEventError, parse_event
from app.events.canonical import CanonicalJsonError, Encoded, encode
from app.events.masking import SecretMasker
from app.events.stored_form import RestoredObject
from app.store.errors import (
    ConcurrencyError,
    ContentMismatchError,
    DuplicateEventError,
    EventTooLargeError,
    PartitionError,
    StoreError,
)
from app.store.records import RecordedEvent
from app.store.transient import refused_for_now

APPEND_SQL = "SELECT * FROM chronicle_append($1, $2, $3, $4, $5, $6, $7, $8, $9)"
APPEND_ONE_SQL = "SELECT * FROM chronicle_append_one($1, $2, $3, $4, $5, $6, $7, $8, $9)"

#: The same, also storing prompt messages ($10 keys, $11 texts) in the same statement: one
#: round trip and one transaction, so the messages commit atomically with the events that
#: name them, or neither does. A function in FROM runs once (its scan keeps its rows), in
#: whatever order the planner joins them.
PUT_MESSAGES_FROM = "chronicle_put_messages($10::bytea[], $11::text[]) AS m"
APPEND_WITH_MESSAGES_SQL = (
    f"SELECT a.* FROM {PUT_MESSAGES_FROM},"
    " chronicle_append($1, $2, $3, $4, $5, $6, $7, $8, $9) AS a"
)
APPEND_ONE_WITH_MESSAGES_SQL = (
    f"SELECT a.* FROM {PUT_MESSAGES_FROM},"
    " chronicle_append_one($1, $2, $3, $4, $5, $6, $7, $8, $9) AS a"
)


class PromptMessages(NamedTuple):
    """Prompt messages (and tool lists) to store with an append, keyed by content hash."""

    keys: list[bytes]
    texts: list[str]

    @classmethod
    def of(cls, messages: Mapping[str, str]) -> PromptMessages | None:
        """From sha256 hex -> canonical JSON text; None when there are none. The database
        checks each key against its text (``chronicle_put_messages``)."""
        if not messages:
            return None
        try:
            keys = [bytes.fromhex(key) for key in messages]
        except ValueError:
            raise ContentMismatchError("a message key is not a sha256 hex digest") from None
        return cls(keys, list(messages.values()))

    @staticmethod
    def joined(parts: Iterable[PromptMessages | None]) -> PromptMessages | None:
        """All of ``parts`` in one (a key given twice is stored once)."""
        merged: dict[bytes, str] = {}
        for part in parts:
            if part is not None:
                merged.update(zip(part.keys, part.texts, strict=True))
        return PromptMessages(list(merged), list(merged.values())) if merged else None


EventLike = Event | Mapping[str, Any]

#: A payload still over the size limit has its strings down to this size moved to blobs too.
SMALLEST_BLOB_BYTES = 1024


class EncodedBatch(NamedTuple):
    """Column arrays for chronicle_append(), the blobs they refer to, and the whole payloads
    for the result."""

    event_ids: list[UUID]
    kinds: list[str]
    sources: list[str]
    causes: list[int | None]
    payload_texts: list[str]
    versions: list[int]
    payloads: list[dict[str, Any]]
    #: sha256 hex -> text of every blob the payloads refer to (stored before the append).
    blobs: dict[str, str]


def too_large(text: str, max_event_bytes: int) -> bool:
    """Whether ``text`` is over the limit in UTF-8 (encoded only when it could be)."""
    return len(text) * 4 > max_event_bytes and len(text.encode()) > max_event_bytes


def encode_payload(
    payload: Any,
    *,
    max_event_bytes: int,
    blob_threshold: int | None,
    masker: SecretMasker | None = None,
) -> Encoded:
    """A payload's stored form: known secrets masked, long strings moved to blobs.

    Masking happens here, at the log's door, before the payload is hashed: nothing recorded
    can hold a known secret (see app/events/masking.py). The text is searched when it shows
    every string as it is; a payload with escapes or blobs is masked value by value.
    A payload still over ``max_event_bytes`` has shorter strings moved to blobs, down to
    ``SMALLEST_BLOB_BYTES``: only a payload whose structure itself is too large is refused.
    """
    encoded = encode(payload, blob_threshold=blob_threshold)
    if masker:
        if encoded.marked:
            masked = masker.mask_value(encoded.value)
            if masked != encoded.value:
                encoded = encode(masked, blob_threshold=blob_threshold)
        elif masker.leaks_into_json(encoded.text):
            encoded = encode(masker.mask_value(encoded.value), blob_threshold=blob_threshold)
    threshold = blob_threshold
    while (
        threshold is not None
        and threshold > SMALLEST_BLOB_BYTES
        and too_large(encoded.text, max_event_bytes)
    ):
        threshold = max(threshold // 4, SMALLEST_BLOB_BYTES)
        encoded = encode(encoded.value, blob_threshold=threshold)
    return encoded


def encode_batch(
    events: Iterable[EventLike],
    max_event_bytes: int,
    masker: SecretMasker | None = None,
    *,
    blob_threshold: int | None = None,
) -> EncodedBatch:
    """Validate every event and encode its payload (``encode_payload``); refuse the whole
    batch on any error. ``max_event_bytes`` limits a payload after its blobs are out."""
    batch = EncodedBatch([], [], [], [], [], [], [], {})
    masker = masker or None  # an empty masker masks nothing: asked once, not per event
    # Bound once: this loop runs per event of a batch of up to tens of thousands.
    add_id, add_kind, add_source = batch.event_ids.append, batch.kinds.append, batch.sources.append
    add_cause, add_text = batch.causes.append, batch.payload_texts.append
    add_version, add_payload = batch.versions.append, batch.payloads.append
    for index, item in enumerate(events):
        event = item if isinstance(item, Event) else parse_event(item)
        try:
            encoded = encode_payload(
                event.payload(),
                max_event_bytes=max_event_bytes,
                blob_threshold=blob_threshold,
                masker=masker,
            )
        except CanonicalJsonError as exc:
            raise InvalidEventError(
                f"event {index} ({event.kind}): {exc}", kind=event.kind
            ) from None
        text = encoded.text
        if too_large(text, max_event_bytes):
            raise EventTooLargeError(
                f"event {index} ({event.kind}) is {len(text.encode()):,} bytes, over the "
                f"limit of {max_event_bytes:,} (CHRONICLE_MAX_EVENT_BYTES) even with its "
                "long strings stored as blobs; nothing was written",
                kind=event.kind,
            )
        add_id(event.event_id)
        add_kind(event.kind)
        add_source(event.source)
        add_cause(event.cause)
        add_text(text)
        add_version(type(event).schema_version)
        if encoded.marked:
            add_payload(RestoredObject.of(encoded.value, encoded.stored))
            batch.blobs.update(encoded.blobs)
        else:
            add_payload(encoded.value)
    return batch


_BY_SEQ = itemgetter("seq")
#: A RecordedEvent from a tuple of its fields in order, without the generated ``__new__``'s
#: keyword handling (a batch builds tens of thousands: 1.0 -> 0.4 us each).
_new_tuple = tuple.__new__


def recorded_from_result(
    session_id: UUID, batch: EncodedBatch, rows: Sequence[asyncpg.Record]
) -> list[RecordedEvent]:
    """Pair what was sent with what the database assigned (seq, position, tx, time, hash)."""
    if len(rows) > 1:
        rows = sorted(rows, key=_BY_SEQ)
    new = _new_tuple
    # Fields in RecordedEvent's order (tests/unit/store/test_recorded_from_result.py).
    return [
        new(
            RecordedEvent,
            (
                row["global_position"],
                session_id,
                row["seq"],
                event_id,
                row["tx"],
                kind,
                source,
                cause,
                payload,
                version,
                row["created_at"],
                row["hash"],
            ),
        )
        for row, event_id, kind, source, cause, payload, version in zip(
            rows,
            batch.event_ids,
            batch.kinds,
            batch.sources,
            batch.causes,
            batch.payloads,
            batch.versions,
            strict=True,
        )
    ]


class DatabaseRefusal(Protocol):
    """What the database said when it refused a write (asyncpg's error fields)."""

    sqlstate: str
    message: str
    detail: str | None
    constraint_name: str | None


def translate_error(
    exc: DatabaseRefusal, session_id: UUID | None, expected_seq: int | None
) -> Exception:
    """Turn the database's refusal into the store's error with a message a user can act on.

    The one place that knows the database's error codes: CR001 stale expected seq, CR003 an
    observation that answers no action, CR004 content that does not match its hash, CR005
    malformed arguments, CR014 an unknown kind or a payload text that is not canonical JSON
    (see the migrations), and the constraints named below; a refusal that passes (a full disk:
    ``app.store.transient``) is ``RefusedForNowError``.
    """
    refusal = refused_for_now(exc)
    if refusal is not None:
        return refusal
    state = exc.sqlstate
    if state == "CR001":
        assert session_id is not None
        return ConcurrencyError(session_id, expected_seq or 0, int(exc.detail or 0))
    constraint = exc.constraint_name or ""
    if state == "23514" and "no partition of relation" in exc.message:
        return PartitionError(
            f"the events table has no partition for this month ({exc.detail or exc.message}); "
            "nothing was written. Run `chronicle db partitions ensure` (the projection runner "
            "keeps the next months in place while it runs)"
        )
    # The constraint triggers across months, or a month's own index (events_YYYY_MM_...).
    if state == "23505" and constraint.endswith("one_observation_per_action"):
        return DuplicateEventError(
            f"an action in session {session_id} already has its observation ({exc.detail})"
        )
    if state == "23505" and constraint.endswith("one_session_created"):
        return InvalidEventError(
            f"session {session_id} already has its session.created event; a session is "
            "created once (start a new session for a new configuration)",
            kind="session.created",
        )
    if state == "23514" and constraint == "events_cause_earlier":
        return InvalidEventError(
            f"cause must be the seq of an earlier event of session {session_id}",
            field="cause",
        )
    if state == "CR003":
        return InvalidEventError(
            f"{exc.message} (session {session_id}); an observation's cause is the seq of the "
            "action it answers",
            field="cause",
        )
    if state == "CR004":
        return ContentMismatchError(f"the database refused to store it: {exc.message}")
    if state == "CR014":
        return InvalidEventError(f"{exc.message} (session {session_id}): verify could not pass it")
    if state == "42501":
        return StoreError(
            f"the database role may not do this: {exc.message}. Connect as chronicle_app "
            "(or a login in it) to a database migrated with `chronicle db migrate`"
        )
    return StoreError(f"the database refused the write: {exc.message} ({exc.sqlstate})")
