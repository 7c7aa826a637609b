"""Appending an imported recording through the event store (``chronicle import --from``).

A session is appended whole, in one batch: it appears complete or not at all. Its id and
its events' ids come from the recording's bytes (``model.py``), so importing the same file
again finds the session already recorded and writes nothing — also when events were
appended to it since (``eval score``'s scores, an annotation): the import is the session's
first events, whatever follows them. A session of that id whose first events are other
events (which only a changed importer could make) is refused, not mixed. The prompt
messages the model calls name are stored first, as the model gateway stores them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from app.errors import ChronicleError
from app.interchange.importers.model import ImportedSession
from app.store import EventStore


class ImportConflict(ChronicleError):
    """The session an import would write already holds other events."""


class WrittenSession(BaseModel):
    """What became of one imported session: ``written`` events appended now (0 when it was
    imported before), ``appended_since`` events recorded after an earlier import of it."""

    model_config = ConfigDict(frozen=True)

    session: ImportedSession
    written: int
    appended_since: int = 0

    @property
    def already_present(self) -> bool:
        return self.written == 0


async def write_session(store: EventStore, session: ImportedSession) -> WrittenSession:
    """Append ``session`` unless it is recorded already (see the module)."""
    ours = [event.event_id for event in session.events]
    # Only the import's length is read: what was appended after it is not this import's.
    recorded = await store.read(session.session_id, limit=len(ours), resolve_blobs=False)
    theirs = [event.event_id for event in recorded]
    if theirs:
        last = await store.last_seq(session.session_id)
        if theirs == ours:
            return WrittenSession(session=session, written=0, appended_since=last - len(ours))
        raise ImportConflict(
            f"session {session.session_id} already holds {last} events that are not this "
            f"import of {session.file} (another version of the importer wrote them); nothing "
            "was written"
        )
    if session.messages:
        await store.put_messages(list(session.messages), list(session.messages.values()))
    await store.append(session.session_id, session.events, expected_seq=0)
    return WrittenSession(session=session, written=len(session.events))
