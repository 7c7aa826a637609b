"""Errors the event store raises; each says what happened and what to do."""

from __future__ import annotations

from uuid import UUID

from app.events import InvalidEventError


class StoreError(Exception):
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


class ContentMismatchError(StoreError):
    """Content-addressed data (a prompt message) whose text does not hash to its key."""


class DatabaseUnavailableError(StoreError):
    """PostgreSQL cannot be reached."""


__all__ = [
    "ConcurrencyError",
    "ContentMismatchError",
    "DatabaseUnavailableError",
    "DuplicateEventError",
    "EventTooLargeError",
    "InvalidEventError",
    "StoreError",
]
