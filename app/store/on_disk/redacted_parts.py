"""What one redaction removed, as the copies on disk need it: which part of which event (to
put the database's marker in an export's line), and the strings it held (to find in the
files that keep no chain: a view's rows, an ATIF trajectory).

The strings must be read before the redaction: afterwards the log holds only the part's
digest. They are the part's string values (a blob's text, an escaped string unescaped), and
for an ``llm.call``'s prompt entry or tool list the strings of the message it names (but a
message's ``role`` and ``type``, which say nothing of its content); not object keys, which
name fields, not content. A string of fewer than ``SHORTEST`` characters is not looked for:
it would match where it is not what was removed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.events.commitment import is_redacted, part_at, strings_in
from app.events.stored_form import BLOB, ESC, OBJ, references, unescape_text
from app.store.blobs import fetch_blobs

if TYPE_CHECKING:
    from app.store.event_store import EventStore
    from app.store.records import RecordedEvent

#: The shortest string looked for in the files that keep no chain.
SHORTEST = 8
#: A prompt message's fields that say what it is, not what it holds.
MESSAGE_FORM_KEYS = frozenset({"role", "type"})


class RedactedPart(BaseModel):
    """One part the database redacted: the event, the path (a JSON Pointer, "" the whole
    payload) and the removed part's digest (what its marker holds, from the record)."""

    model_config = ConfigDict(frozen=True)

    session_id: UUID
    seq: int
    path: str
    removed: str

    @classmethod
    def of(cls, record: RecordedEvent) -> RedactedPart:
        """The part a ``redaction`` record names."""
        return cls(
            session_id=record.session_id,
            seq=int(record.payload["target_seq"]),
            path=str(record.payload["path"]),
            removed=str(record.payload["removed"]),
        )

    def describe(self) -> str:
        where = self.path or "(the whole payload)"
        return f"seq {self.seq} {where} of session {self.session_id}"


def worth_looking_for(texts: list[str]) -> tuple[list[str], int]:
    """The distinct texts long enough to look for, and how many were shorter."""
    kept = list(dict.fromkeys(text for text in texts if len(text) >= SHORTEST))
    short = len({text for text in texts if len(text) < SHORTEST})
    return kept, short


async def texts_of_part(store: EventStore, session_id: UUID, seq: int, path: str) -> list[str]:
    """The strings the part at ``path`` of the event holds now (see the module); before it is
    redacted. ``RedactionPathError`` when the path names nothing; [] when there is no such
    event (the redaction then says so)."""
    page = await store.read(session_id, after_seq=seq - 1, limit=1, resolve_blobs=False)
    if not page or page[0].seq != seq:
        return []
    event = page[0]
    stored = event.stored_payload
    part = part_at(stored, path)
    blobs = await fetch_blobs(store.pool, references(part))
    texts = _strings(part, blobs)
    if event.kind == "llm.call" and isinstance(stored, dict):
        named = {h for h in stored.get("prompt", []) if isinstance(h, str)}
        if isinstance(stored.get("tools"), str):
            named.add(stored["tools"])
        keys = sorted(named & set(strings_in(part)))
        for message in (await store.read_messages(keys)).values() if keys else ():
            texts += _strings(message, {}, skip=MESSAGE_FORM_KEYS)
    return texts


def _strings(node: Any, blobs: dict[str, str], skip: frozenset[str] = frozenset()) -> list[str]:
    """The string values of a stored node (not its keys, nor what a marker stands for; not
    the values of ``skip``'s keys)."""
    if isinstance(node, str):
        return [node]
    if is_redacted(node):
        return []
    if isinstance(node, dict) and BLOB in node:
        text = blobs.get(str(node[BLOB]))
        return [text] if text is not None else []
    if isinstance(node, dict) and set(node) == {ESC}:
        inner = node[ESC]
        if isinstance(inner, dict):
            text = blobs.get(str(inner.get(BLOB)))
            return [unescape_text(text)] if text is not None else []
        return [unescape_text(inner)] if isinstance(inner, str) else []
    if isinstance(node, dict) and set(node) == {OBJ} and isinstance(node[OBJ], list):
        return [s for pair in node[OBJ] if len(pair) == 2 for s in _strings(pair[1], blobs, skip)]
    if isinstance(node, dict):
        values = [value for key, value in node.items() if key not in skip]
        return [s for value in values for s in _strings(value, blobs, skip)]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item, blobs, skip)]
    return []
