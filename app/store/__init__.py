"""PostgreSQL event store: append, read, subscribe, checkpoints, blobs, chain verification.

``SessionLog`` is the narrow part one session's loop uses (append, read, subscribe,
checkpoints): ``EventStore`` and ``MemoryLog`` implement it (app/store/session_log.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

if TYPE_CHECKING:
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

#: Each export's module, imported on first use: ``app/config.py`` reads this package's config
#: model, and that must not import the whole package into every command.
_EXPORTED_FROM = {
    "MissingBlobError": "app.store.blobs",
    "ConcurrencyError": "app.store.errors",
    "ContentMismatchError": "app.store.errors",
    "DatabaseUnavailableError": "app.store.errors",
    "DuplicateEventError": "app.store.errors",
    "EventTooLargeError": "app.store.errors",
    "InvalidEventError": "app.store.errors",
    "RefusedForNowError": "app.store.errors",
    "StoreError": "app.store.errors",
    "EventStore": "app.store.event_store",
    "MemoryLog": "app.store.memory_log",
    "Position": "app.store.records",
    "RecordedEvent": "app.store.records",
    "VerifyReport": "app.store.records",
    "SessionLog": "app.store.session_log",
    "SessionStream": "app.store.session_log",
}


__getattr__ = lazy_exports(__name__, _EXPORTED_FROM)
