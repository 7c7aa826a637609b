"""Errors the event store raises; each says what happened and what to do."""

from __future__ import annotations

from uuid import UUID

from app.errors import ChronicleError
from app.events import InvalidEventError


class StoreError(ChronicleError):
    """Base of event store errors."""


class ConcurrencyError(StoreError):
    """Another writer appended first: re-read from ``actual_seq`` and decide again."""

    def __init__(self, session_id: UUID, expected_seq: int, actual_seq: int):
        super().__init__(
            f"session {session_id} is at seq {actual_seq}, but the writer expected "
            f"{expected_seq}; read the new events and retry"
        )
        self.session_id = session_id
        self.expected_seq = expected_seq
        self.actual_seq = actual_seq


class EventTooLargeError(InvalidEventError):
    """An event's payload is over the configured size limit; nothing of its batch is written."""


class DuplicateEventError(StoreError):
    """An event_id is already recorded elsewhere, or an action already has its observation."""


class PartitionError(StoreError):
    """A monthly partition of events is missing, or could not be made, listed or dropped."""


class ContentMismatchError(StoreError):
    """Content-addressed data (a prompt message) whose text does not hash to its key."""


class DatabaseUnavailableError(StoreError):
    """PostgreSQL cannot be reached."""


class RefusedForNowError(StoreError):
    """PostgreSQL is there but cannot take the request now (its disk is full, it is out of
    memory or connections, it takes no writes: ``app.store.transient``). Nothing is wrong with
    the request: keep it and try again later. ``server_message`` is PostgreSQL's own text,
    which may name the server's files: for the operator's log, never for a user."""

    def __init__(self, sqlstate: str, reason: str, server_message: str = "") -> None:
        super().__init__(f"the database cannot take this now: {reason}; try again later")
        self.sqlstate = sqlstate
        self.reason = reason
        self.server_message = server_message


__all__ = [
    "ConcurrencyError",
    "ContentMismatchError",
    "DatabaseUnavailableError",
    "DuplicateEventError",
    "EventTooLargeError",
    "InvalidEventError",
    "PartitionError",
    "RefusedForNowError",
    "StoreError",
]
