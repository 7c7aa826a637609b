"""A hand-made session log for pure tests: events recorded as the store would hand them back
(seq, cause, payload), without a database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from app.events import Event, Message
from app.store import RecordedEvent


def as_recorded(
    event: Event, session_id: uuid.UUID, seq: int, payload: Any = None
) -> RecordedEvent:
    """``event`` as the store hands it back at ``seq`` (its ``cause`` kept as given; its own
    payload unless ``payload`` is given, e.g. as a reader of the stored form gets it)."""
    return RecordedEvent(
        global_position=seq,
        session_id=session_id,
        seq=seq,
        event_id=event.event_id,
        tx=1,
        kind=event.kind,
        source=event.source,
        cause=event.cause,
        payload=event.payload() if payload is None else payload,
        schema_version=type(event).schema_version,
        created_at=datetime.now(UTC),
        hash=b"",
    )


class HandMadeLog:
    def __init__(self) -> None:
        self.session_id = uuid.uuid4()
        self.events: list[RecordedEvent] = []

    def add(self, *events: Event) -> list[RecordedEvent]:
        """Record ``events`` in order; an event's ``cause`` is kept as given."""
        added = []
        for event in events:
            seq = len(self.events) + 1
            recorded = as_recorded(event, self.session_id, seq)
            self.events.append(recorded)
            added.append(recorded)
        return added

    @property
    def next_seq(self) -> int:
        return len(self.events) + 1


def user_message(session_id: uuid.UUID, seq: int) -> RecordedEvent:
    """The user's message ``seq`` of a session, as the store hands it back: a filler event
    for tests of delivery, whose content is its seq."""
    return as_recorded(Message(content=str(seq)), session_id, seq)
