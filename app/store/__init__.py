"""The event store: the log and nothing else. Everything outside app/store imports it from here.

What it offers (docs/architecture.md, "The store's surface"):

- the log: ``EventStore`` (PostgreSQL: append, read, subscribe, checkpoints, blobs, verify),
  ``SessionLog`` / ``SessionStream`` (the part one session's loop uses; ``MemoryLog`` and
  ``BufferedSession`` implement it too), ``Position``, ``RecordedEvent``, ``VerifyReport``,
  ``EncodedBatch`` / ``EventLike`` / ``too_large`` (an append's input), the subscriptions
  (``SessionSubscription``, ``GlobalSubscription``) and ``EVENT_COLUMNS`` for a feature's
  query that returns whole events;
- its errors, rooted at ``StoreError``, and the database's passing troubles in one place
  (``TRANSIENT_ERRORS``, ``DATABASE_GONE_ERRORS``, ``REFUSED_FOR_NOW``, ``refused_for_now``);
- the driver as a feature's ``sql/`` module needs it (``driver.py``): ``Connection``, ``Pool``,
  ``Record`` and the refusals it may catch (``DatabaseError``, ``UniqueViolationError``, ...);
- who runs a session: ``claim_session`` (an advisory lock, no table: every runner of a session
  takes it, replay as much as sessions) and ``claimed_sql`` for a query that asks;
- the action worker (``ActionWorker``): answers a session's actions in its log;
- ``collector_paused``: the garbage collector paused while a reader builds thousands of
  objects that all survive (the store's reads; the readers that map what they read);
- the database itself: ``ensure_database``, ``admin_database_url``, ``kept_running`` (the
  embedded server under a long-lived process), ``redact`` (a URL for a message), readiness.

Public subpackages and modules, each with a surface of its own: ``app.store.config`` (the
config objects the settings, ``app/config/``, hold), ``app.store.migrate`` (alembic),
``app.store.archive``, ``app.store.integrity``, ``app.store.embedded``, ``app.store.analytics``,
``app.store.partitions`` (the monthly partitions of ``events``).
Every other module is
private (tests/unit/test_layering.py). A feature's tables are not here: they live in its own
``sql/`` folder (``app/sessions/sql/``, ``app/evaluation/sql/``, ...) and reach the database
through an ``EventStore``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

if TYPE_CHECKING:
    from app.store.action_worker import (
        ActionWorker,
        ServiceFailed,
        ServiceInterrupted,
        WorkerInterrupted,
        WorkerStopped,
        unrecordable_answer,
        worker_checkpoint,
    )
    from app.store.append import EncodedBatch, EventLike, too_large
    from app.store.blobs import MissingBlobError
    from app.store.buffered_session import BufferedSession
    from app.store.collector_pause import collector_paused
    from app.store.database import (
        admin_database_url,
        ensure_database,
        ensure_database_async,
        forget_migrations,
        kept_running,
    )
    from app.store.driver import (
        CheckViolationError,
        Connection,
        ConnectionUnusableError,
        DatabaseError,
        ForeignKeyViolationError,
        Pool,
        Record,
        UniqueViolationError,
    )
    from app.store.erasure import ErasedSession, ErasureRefused, erase_session, tombstones
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
    from app.store.event_store import EVENT_COLUMNS, EventStore, session_months
    from app.store.integrity.tombstones import Tombstone
    from app.store.masked_secrets import MaskedSecret
    from app.store.memory_log import MemoryLog
    from app.store.on_disk.archive_dir import existing_anchor_key
    from app.store.on_disk.disk_changes import DiskChange, DiskChanges
    from app.store.on_disk.erased_copies import remove_sessions_on_disk
    from app.store.on_disk.ledger import WrittenKind, record_written
    from app.store.on_disk.redacted_copies import remove_parts_on_disk
    from app.store.on_disk.redacted_parts import RedactedPart, texts_of_part
    from app.store.on_disk.search import OnDiskReport, redact_on_disk
    from app.store.readiness import schema_revision, write_refusal
    from app.store.records import Position, RecordedEvent, VerifyReport
    from app.store.redaction import RedactionRefused
    from app.store.scrub import ScrubReport, scrub_tables
    from app.store.session_claims import SessionBusyError, claim_session, claimed_sql
    from app.store.session_log import SessionLog, SessionStream
    from app.store.subscriptions import GlobalSubscription, SessionSubscription
    from app.store.transient import (
        DATABASE_GONE_ERRORS,
        REFUSED_FOR_NOW,
        TRANSIENT_ERRORS,
        refused_for_now,
    )
    from app.store.urls import failover_url, redact
    from app.store.value_search import redact_value

#: Each export's module, imported on first use: ``app/config/`` reads this package's config
#: model, and that must not import the whole package into every command.
_EXPORTED_FROM = {
    "ActionWorker": "app.store.action_worker",
    "ServiceFailed": "app.store.action_worker",
    "ServiceInterrupted": "app.store.action_worker",
    "WorkerInterrupted": "app.store.action_worker",
    "WorkerStopped": "app.store.action_worker",
    "unrecordable_answer": "app.store.action_worker",
    "worker_checkpoint": "app.store.action_worker",
    "EncodedBatch": "app.store.append",
    "EventLike": "app.store.append",
    "too_large": "app.store.append",
    "MissingBlobError": "app.store.blobs",
    "BufferedSession": "app.store.buffered_session",
    "collector_paused": "app.store.collector_pause",
    "admin_database_url": "app.store.database",
    "ensure_database": "app.store.database",
    "ensure_database_async": "app.store.database",
    "forget_migrations": "app.store.database",
    "kept_running": "app.store.database",
    "CheckViolationError": "app.store.driver",
    "Connection": "app.store.driver",
    "ConnectionUnusableError": "app.store.driver",
    "DatabaseError": "app.store.driver",
    "ForeignKeyViolationError": "app.store.driver",
    "Pool": "app.store.driver",
    "Record": "app.store.driver",
    "UniqueViolationError": "app.store.driver",
    "ConcurrencyError": "app.store.errors",
    "ContentMismatchError": "app.store.errors",
    "DatabaseUnavailableError": "app.store.errors",
    "DuplicateEventError": "app.store.errors",
    "EventTooLargeError": "app.store.errors",
    "InvalidEventError": "app.store.errors",
    "RefusedForNowError": "app.store.errors",
    "StoreError": "app.store.errors",
    "EVENT_COLUMNS": "app.store.event_store",
    "EventStore": "app.store.event_store",
    "session_months": "app.store.event_store",
    "MaskedSecret": "app.store.masked_secrets",
    "MemoryLog": "app.store.memory_log",
    "existing_anchor_key": "app.store.on_disk.archive_dir",
    "DiskChange": "app.store.on_disk.disk_changes",
    "DiskChanges": "app.store.on_disk.disk_changes",
    "remove_sessions_on_disk": "app.store.on_disk.erased_copies",
    "WrittenKind": "app.store.on_disk.ledger",
    "record_written": "app.store.on_disk.ledger",
    "remove_parts_on_disk": "app.store.on_disk.redacted_copies",
    "RedactedPart": "app.store.on_disk.redacted_parts",
    "texts_of_part": "app.store.on_disk.redacted_parts",
    "OnDiskReport": "app.store.on_disk.search",
    "redact_on_disk": "app.store.on_disk.search",
    "schema_revision": "app.store.readiness",
    "write_refusal": "app.store.readiness",
    "Position": "app.store.records",
    "RecordedEvent": "app.store.records",
    "VerifyReport": "app.store.records",
    "RedactionRefused": "app.store.redaction",
    "ScrubReport": "app.store.scrub",
    "scrub_tables": "app.store.scrub",
    "ErasedSession": "app.store.erasure",
    "ErasureRefused": "app.store.erasure",
    "erase_session": "app.store.erasure",
    "tombstones": "app.store.erasure",
    "Tombstone": "app.store.integrity.tombstones",
    "redact_value": "app.store.value_search",
    "SessionBusyError": "app.store.session_claims",
    "claim_session": "app.store.session_claims",
    "claimed_sql": "app.store.session_claims",
    "SessionLog": "app.store.session_log",
    "SessionStream": "app.store.session_log",
    "GlobalSubscription": "app.store.subscriptions",
    "SessionSubscription": "app.store.subscriptions",
    "DATABASE_GONE_ERRORS": "app.store.transient",
    "REFUSED_FOR_NOW": "app.store.transient",
    "TRANSIENT_ERRORS": "app.store.transient",
    "refused_for_now": "app.store.transient",
    "failover_url": "app.store.urls",
    "redact": "app.store.urls",
}

__all__ = [
    "DATABASE_GONE_ERRORS",
    "EVENT_COLUMNS",
    "REFUSED_FOR_NOW",
    "TRANSIENT_ERRORS",
    "ActionWorker",
    "BufferedSession",
    "CheckViolationError",
    "ConcurrencyError",
    "Connection",
    "ConnectionUnusableError",
    "ContentMismatchError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DiskChange",
    "DiskChanges",
    "DuplicateEventError",
    "EncodedBatch",
    "ErasedSession",
    "ErasureRefused",
    "EventLike",
    "EventStore",
    "EventTooLargeError",
    "ForeignKeyViolationError",
    "GlobalSubscription",
    "InvalidEventError",
    "MaskedSecret",
    "MemoryLog",
    "MissingBlobError",
    "OnDiskReport",
    "Pool",
    "Position",
    "Record",
    "RecordedEvent",
    "RedactedPart",
    "RedactionRefused",
    "RefusedForNowError",
    "ScrubReport",
    "ServiceFailed",
    "ServiceInterrupted",
    "SessionBusyError",
    "SessionLog",
    "SessionStream",
    "SessionSubscription",
    "StoreError",
    "Tombstone",
    "UniqueViolationError",
    "VerifyReport",
    "WorkerInterrupted",
    "WorkerStopped",
    "WrittenKind",
    "admin_database_url",
    "claim_session",
    "claimed_sql",
    "collector_paused",
    "ensure_database",
    "ensure_database_async",
    "erase_session",
    "existing_anchor_key",
    "failover_url",
    "forget_migrations",
    "kept_running",
    "record_written",
    "redact",
    "redact_on_disk",
    "redact_value",
    "refused_for_now",
    "remove_parts_on_disk",
    "remove_sessions_on_disk",
    "schema_revision",
    "scrub_tables",
    "session_months",
    "texts_of_part",
    "tombstones",
    "too_large",
    "unrecordable_answer",
    "worker_checkpoint",
    "write_refusal",
]

__getattr__ = lazy_exports(__name__, _EXPORTED_FROM)
