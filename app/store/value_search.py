"""Finding one secret value everywhere the log holds it, and redacting each place
(``chronicle redact --value-file``; docs/erasure.md).

A value that leaked (a pasted key, a password a command printed) is rarely in one place: the
command's output, the model call that read it (its prompt messages), a long output's blob,
maybe a fork that copied all of it. So the search covers:

- events' payloads: every string that holds the value is redacted whole (a marker replaces a
  node, never part of one);
- blobs whose text holds it, and prompt messages (and tool lists) whose JSON holds it: each
  goes from every event that names it, then is deleted (``app.store.redaction``).

``sessions`` limits the search of payloads to those sessions; content stored once goes from
everywhere it is named, whichever session that is, as a redaction of it must.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.events.stored_form import ESC, escape_text, needs_escape, unescape_text
from app.store.records import RecordedEvent
from app.store.redaction import forget_everywhere, redact_where

if TYPE_CHECKING:
    from app.store.event_store import EventStore

EVENTS_SQL = """
SELECT session_id, seq FROM events
WHERE strpos(payload::text, $1::text) > 0 AND ($2::uuid[] IS NULL OR session_id = ANY($2::uuid[]))
ORDER BY session_id, seq
"""
BLOBS_SQL = "SELECT encode(sha256, 'hex') FROM blobs WHERE strpos(content, $1::text) > 0"
MESSAGES_SQL = (
    "SELECT encode(hash, 'hex') FROM llm_messages WHERE strpos(message::text, $1::text) > 0"
)


def json_form(value: str) -> str:
    """The value as it appears inside a JSON string (quotes, backslashes, controls escaped),
    which is how the database writes jsonb as text."""
    return json.dumps(value, ensure_ascii=False)[1:-1]


def stored_texts(value: str) -> list[str]:
    """How the value can appear in stored text: as it is, unless it holds what PostgreSQL
    cannot store (NUL, a lone surrogate), and as an escaped string holds it (``$esc``: inside
    a string that holds such a character, the value's own backslashes are doubled)."""
    forms = [] if needs_escape(value) else [value]
    escaped = escape_text(value)
    return forms + ([escaped] if escaped not in forms else [])


def holds(value: str) -> Any:
    """Whether a stored node is a string (plain or escaped) that holds ``value``."""

    def matches(node: Any) -> bool:
        if isinstance(node, str):
            return value in node
        if isinstance(node, dict) and set(node) == {ESC} and isinstance(node[ESC], str):
            return value in unescape_text(node[ESC])
        return False

    return matches


async def redact_value(
    store: EventStore,
    value: str,
    *,
    sessions: Sequence[UUID] | None,
    reason: str,
    user: str,
) -> list[RecordedEvent]:
    """Redact every place the log holds ``value`` (see the module); the records made."""
    records: list[RecordedEvent] = []
    scope = list(sessions) if sessions is not None else None
    places = {
        (row["session_id"], row["seq"])
        for text in stored_texts(value)
        for row in await store.pool.fetch(EVENTS_SQL, json_form(text), scope)
    }
    for session_id, seq in sorted(places):
        records += await redact_where(
            store, session_id, seq, holds(value), reason=reason, user=user
        )
    stored_once = [("blob", BLOBS_SQL, text) for text in stored_texts(value)]
    stored_once += [("message", MESSAGES_SQL, json_form(text)) for text in stored_texts(value)]
    for kind, sql, form in stored_once:
        for key in await store.pool.fetch(sql, form):
            records += await forget_everywhere(store, kind, key[0], reason=reason, user=user)
    return records
