"""A session's annotations, and the session list's filters over them (migration 0025).

Annotations are events of their session (app/events/annotation.py); the partial index
``events_annotations`` lets a reader find them without reading the session's other events:
the page's chips (``session_annotations``), and the list's conditions (``LABELLED``,
``TAGGED``, ``UNREVIEWED``), each an ``EXISTS`` over that index for one listed session.

A label and a tag match whatever their case. A fork's copies of its source's annotations
(``replayed_from``) were written about the source: they match no filter, and do not make a
fork reviewed.

**Reviewed** (the review queue's test): the session's log holds an annotation labelled
``reviewed`` (any case) on the whole session (no ``target_seq``), written in that session.
Who wrote it, and whether the session went on after it, does not matter.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.events.annotation import REVIEWED
from app.events.stored_form import is_encoded
from app.store import session_months

if TYPE_CHECKING:
    from app.store import EventStore

#: The annotations of the listed session ``s`` (of the list's query), copies left out.
_OWN = (
    "SELECT 1 FROM events a WHERE a.session_id = s.session_id AND a.kind = 'annotation' "
    "AND NOT a.payload ? 'replayed_from'"
)
#: ... one of which has the label ``{param}``.
LABELLED = f"EXISTS ({_OWN} AND lower(a.payload ->> 'label') = lower({{param}}::text))"
#: ... one of which has the tag ``{param}``.
TAGGED = (
    f"EXISTS ({_OWN} AND EXISTS (SELECT 1 FROM jsonb_array_elements_text("
    "coalesce(a.payload -> 'tags', '[]'::jsonb)) t WHERE lower(t) = lower({param}::text)))"
)
#: ... none of which marks it reviewed (see the module).
UNREVIEWED = (
    f"NOT EXISTS ({_OWN} AND a.payload ->> 'target_seq' IS NULL "
    f"AND lower(a.payload ->> 'label') = '{REVIEWED}')"
)

ANNOTATIONS_SQL = f"""
SELECT seq, created_at, payload FROM events
WHERE session_id = $1 AND kind = 'annotation' AND {session_months("$1")}
ORDER BY seq LIMIT $2
"""


async def session_annotations(
    store: EventStore, session_id: UUID, limit: int
) -> list[tuple[int, datetime, dict[str, Any]]]:
    """The session's annotations in order, at most ``limit``: (seq, created_at, payload).

    Read over the partial index, not with the session's events; an annotation stored with
    escapes (a lone surrogate in its comment) is read again through the store, whole."""
    rows = await store.pool.fetch(ANNOTATIONS_SQL, session_id, limit)
    found: list[tuple[int, datetime, dict[str, Any]]] = []
    for row in rows:
        payload = row["payload"]
        if is_encoded(payload):
            [event] = await store.read(session_id, after_seq=row["seq"] - 1, limit=1)
            payload = event.payload
        found.append((row["seq"], row["created_at"], dict(payload)))
    return found
