"""PostgreSQL event store: append, read, subscribe, checkpoints, blobs, chain verification."""

from app.store.blobs import MissingBlobError
from app.store.errors import (
    ConcurrencyError,
    ContentMismatchError,
    DatabaseUnavailableError,
    DuplicateEventError,
    EventTooLargeError,
    InvalidEventError,
    RefusedForNowError,
    StoreError,
)
from app.store.event_store import EventStore
from app.store.records import Position, RecordedEvent, VerifyReport

__all__ = [
    "ConcurrencyError",
    "ContentMismatchError",
    "DatabaseUnavailableError",
    "DuplicateEventError",
    "EventStore",
    "EventTooLargeError",
    "InvalidEventError",
    "MissingBlobError",
    "Position",
    "RecordedEvent",
    "RefusedForNowError",
    "StoreError",
    "VerifyReport",
]
