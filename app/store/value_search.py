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

An archived session is left as it is, and its places are reported (``kept``): its head row is
the record of its archive and takes no event (CR017), so no ``redaction`` record can be
appended to it, and a marker without its record is what ``verify`` calls tampering. Its
events are still here until their month is detached; its archive directory, the record, is
rewritten without the value (``app.store.on_disk``). Content stored once that an archived
session names is kept (deleting it would leave that session naming a row that is gone); the
other sessions' references to it are redacted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel

from app.events.stored_form import ESC, escape_text, needs_escape, unescape_text
from app.store.records import RecordedEvent
from app.store.redaction import NAMING_SQL, forget_everywhere, redact_where
from app.store.redaction import _names as names

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
ARCHIVED_SQL = """
SELECT id, archived_to FROM sessions WHERE id = ANY($1::uuid[]) AND archived_at IS NOT NULL
"""


class KeptInArchivedSession(BaseModel):
    """A place of the value the database keeps: an event of an archived session that holds
    it, or that names content stored once (``named``: ``blob <sha256>``, ``message
    <sha256>``) that does."""

    session_id: UUID
    seq: int
    archived_to: str
    named: str = ""

    def describe(self) -> str:
        what = (
            f"names the {self.named}, which holds it; neither is" if self.named else "holds it; not"
        )
        return (
            f"in archived session {self.session_id}: event {self.seq} {what} redacted in the "
            f"database (its archive, {self.archived_to}, is the record, and an archived "
            "session takes no redaction record); its events here go when their month is "
            "detached"
        )


@dataclass(frozen=True)
class ValueRedaction:
    """What a search of the log for one value did: the records made, the places kept."""

    records: list[RecordedEvent]
    kept: list[KeptInArchivedSession]


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
) -> ValueRedaction:
    """Redact every place the log holds ``value`` (see the module), but in archived
    sessions; the records made, and the places kept."""
    records: list[RecordedEvent] = []
    kept: list[KeptInArchivedSession] = []
    scope = list(sessions) if sessions is not None else None
    places = {
        (row["session_id"], row["seq"])
        for text in stored_texts(value)
        for row in await store.pool.fetch(EVENTS_SQL, json_form(text), scope)
    }
    archived = await _archived(store, (session_id for session_id, _ in places))
    for session_id, seq in sorted(places):
        if session_id in archived:
            kept.append(
                KeptInArchivedSession(
                    session_id=session_id, seq=seq, archived_to=archived[session_id]
                )
            )
            continue
        records += await redact_where(
            store, session_id, seq, holds(value), reason=reason, user=user, whole_if_needed=True
        )
    stored_once = [("blob", BLOBS_SQL, text) for text in stored_texts(value)]
    stored_once += [("message", MESSAGES_SQL, json_form(text)) for text in stored_texts(value)]
    for kind, sql, form in stored_once:
        for (key,) in await store.pool.fetch(sql, form):
            found = await _forget_unless_archived(store, kind, key, reason=reason, user=user)
            records += found.records
            kept += found.kept
    return ValueRedaction(records=records, kept=kept)


async def _forget_unless_archived(
    store: EventStore, kind: str, key: str, *, reason: str, user: str
) -> ValueRedaction:
    """A blob or prompt message that holds the value: gone from everywhere
    (``forget_everywhere``), unless an archived session names it; then the row stays, each
    other session's reference to it is redacted, and the archived sessions' are kept."""
    naming = await store.pool.fetch(NAMING_SQL[kind], key)
    held = await _archived(store, (row["session_id"] for row in naming))
    if not held:
        return ValueRedaction(
            records=await forget_everywhere(store, kind, key, reason=reason, user=user), kept=[]
        )
    found = ValueRedaction(records=[], kept=[])
    for session_id, seq in sorted((row["session_id"], row["seq"]) for row in naming):
        if session_id in held:
            found.kept.append(
                KeptInArchivedSession(
                    session_id=session_id,
                    seq=seq,
                    archived_to=held[session_id],
                    named=f"{kind} {key}",
                )
            )
        else:
            found.records.extend(
                await redact_where(
                    store,
                    session_id,
                    seq,
                    names(kind, key),
                    reason=reason,
                    user=user,
                    following=False,
                )
            )
    return found


async def _archived(store: EventStore, sessions: Iterable[UUID]) -> dict[UUID, str]:
    """Which of the sessions are archived, and where to."""
    rows = await store.pool.fetch(ARCHIVED_SQL, sorted(set(sessions)))
    return {row["id"]: row["archived_to"] for row in rows}
