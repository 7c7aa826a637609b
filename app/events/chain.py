"""Which text an event's hash covers: its payload (chain 1), or its payload's tree commitment
(chain 2, every event appended since migration 0029), so that a part can be redacted and the
chain still verify (``app.events.commitment``).

An event says nothing of its chain: its hash matches one of the two documents, and a reader
that checks it tries both. Accepting either gives a forger nothing: each is a sha256 over
the previous event's hash, and neither can be made to match a chosen hash.

A chain-1 event's content can only go whole, and then its hash matches neither document: no
commitment covers what went. Its payload is then one whole-payload marker (``whole_marker``),
its stored hash is taken as given (the next event, and every hash and anchor after it, still
cover it), and a ``redaction`` record of that digest must follow it: such a redaction proves
the event's *place* in the chain, not what was removed (``PLACE``), where a chain-2 one
proves both (``CONTENT``). Chain-1 events are a session's first ones (all appended before the
upgrade), so one after a chain-2 event is never taken as given.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from app.events.canonical import chain_hash, format_timestamp, hashed_document, stored_json
from app.events.commitment import WAS, commitment, is_redacted
from app.events.stored_form import REDACTED

#: What a recorded redaction proves: the event's place and what was removed (its marker's
#: digest stands in the commitment its hash covers: chain 2), or only its place (chain 1).
CONTENT = "content"
PLACE = "place"


def committed_document(
    *,
    session_id: str,
    seq: int,
    event_id: str,
    kind: str,
    source: str,
    cause: int | None,
    payload: Any,
    schema_version: int,
    created_at: datetime,
) -> str:
    """The chain-2 document: ``hashed_document``'s with ``"chain":2`` and the payload's
    commitment (salted with the event's id) in place of the payload."""
    return stored_json(
        {
            "cause": cause,
            "chain": 2,
            "created_at": format_timestamp(created_at),
            "event_id": event_id,
            "kind": kind,
            "payload_commitment": commitment(payload, UUID(event_id).bytes),
            "schema_version": schema_version,
            "seq": seq,
            "session_id": session_id,
            "source": source,
        }
    )


def chain_of(previous: bytes, expected: bytes, **fields: Any) -> int | None:
    """The chain (1 or 2) under which ``expected`` is this event's link from ``previous``;
    None when it is neither (the event, or one before it, was changed). ``fields`` are
    ``hashed_document``'s; the payload in its stored form."""
    if chain_hash(previous, hashed_document(**fields)) == expected:
        return 1
    if chain_hash(previous, committed_document(**fields)) == expected:
        return 2
    return None


def link(previous: bytes, **fields: Any) -> bytes:
    """The hash the database gives a new event (the current chain)."""
    return chain_hash(previous, committed_document(**fields))


def whole_marker(stored: Any) -> str | None:
    """The digest (hex) a stored payload that is one whole-payload marker holds (a payload is
    an object, so ``"was": "object"``); None for any other payload."""
    if is_redacted(stored) and stored.get(WAS) == "object":
        return str(stored[REDACTED])
    return None
