"""PostgreSQL event store: append, read, subscribe, checkpoints, blobs, chain verification.

``SessionLog`` is the narrow part one session's loop uses (append, read, subscribe,
checkpoints): ``EventStore`` and ``MemoryLog`` implement it (app/store/session_log.py)."""

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
from app.store.memory_log import MemoryLog
from app.store.records import Position, RecordedEvent, VerifyReport
from app.store.session_log import SessionLog, SessionStream

__all__ = [
    "ConcurrencyError",
    "ContentMismatchError",
    "DatabaseUnavailableError",
    "DuplicateEventError",
    "EventStore",
    "EventTooLargeError",
    "InvalidEventError",
    "MemoryLog",
    "MissingBlobError",
    "Position",
    "RecordedEvent",
    "RefusedForNowError",
    "SessionLog",
    "SessionStream",
    "StoreError",
    "VerifyReport",
]
