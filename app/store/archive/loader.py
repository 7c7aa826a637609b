"""Load an export file into this database: the same sessions, event for event.

Nothing of a file is loaded unless all of it verifies (a first pass with the offline
checker, which also validates every event against its kind's schema). Then, per session in
one transaction, its blobs and prompt messages are put (content-addressed, idempotent) and
its events go through ``chronicle_import`` (migration 0006), which inserts them verbatim —
same event ids, seqs, times and hashes — after checking in the database that they extend the
session's chain; events the database already holds must be the very same ones and are
skipped. Importing a file twice therefore changes nothing the second time, and a session that
grew since an earlier import gets only its new events. A session this database archived and
whose months were dropped since comes back too: its archived head, kept as the record of the
archive, is let go first in the same transaction, only for the very same session
(``chronicle_restore_archived``, 0027).

Writing events with the times they were recorded is what the application's login may not do
(it could backdate history), so ``chronicle_import`` is the owner's: import with the URL
migrations use.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from app.events.canonical import stored_json
from app.store.archive.checker import CheckedEvent, FileProblem, check_file, checked_events
from app.store.archive.lines import MessageLine, SessionLine
from app.store.errors import StoreError
from app.store.partitions import ensure_partitions

if TYPE_CHECKING:
    from app.store.event_store import EventStore

IMPORT_SQL = """
SELECT chronicle_import($1::uuid, $2::integer[], $3::uuid[], $4::text[], $5::text[],
                        $6::integer[], $7::text[], $8::smallint[], $9::timestamptz[],
                        $10::bytea[])
"""
#: A session this database archived, whose months were dropped since: its head (the record
#: of the archive) let go for the very same session, in the import's transaction (0027).
RESTORE_SQL = "SELECT chronicle_restore_archived($1::uuid, $2::integer, $3::bytea)"
#: Events per call of the import function (a session's calls share one transaction).
EVENTS_PER_CALL = 500
#: Payload text per call, at most (a long session of large outputs).
BYTES_PER_CALL = 32 * 1024 * 1024
OWNER_ONLY = (
    "importing writes events with the times they were recorded, which only the owner of "
    "Chronicle's tables may do (the application's login may not backdate the log): run "
    "`chronicle import` with the URL `chronicle db migrate` uses"
)


class ImportRefused(StoreError):
    """Nothing (or nothing more) of the file was imported; the message says why."""


class ImportReport(BaseModel):
    sessions: int
    #: Events written now.
    imported: int
    #: Events the database already held (the same ones).
    present: int
    messages: int
    blobs: int


def _chunks(events: list[CheckedEvent]) -> Iterator[list[CheckedEvent]]:
    """The session's events in calls of the import function; an event whose hash is taken as
    given shares its call with its ``redaction`` record (the database looks for it there)."""
    records = {
        event.line.payload.get("target_seq"): event.line.seq
        for event in events
        if event.line.kind == "redaction" and not event.line.payload.get("path")
    }
    chunk: list[CheckedEvent] = []
    size, together_to = 0, 0
    for event in events:
        if (
            chunk
            and event.line.seq > together_to
            and (len(chunk) >= EVENTS_PER_CALL or size + len(event.stored_text) > BYTES_PER_CALL)
        ):
            yield chunk
            chunk, size = [], 0
        chunk.append(event)
        size += len(event.stored_text)
        if event.taken_as_given:
            together_to = max(together_to, records.get(event.line.seq, 0))
    if chunk:
        yield chunk


def _arguments(session: UUID, chunk: Sequence[CheckedEvent]) -> list[object]:
    lines = [event.line for event in chunk]
    return [
        session,
        [line.seq for line in lines],
        [line.event_id for line in lines],
        [line.kind for line in lines],
        [line.source for line in lines],
        [line.cause for line in lines],
        [event.stored_text for event in chunk],
        [line.schema_version for line in lines],
        [event.created_at for event in chunk],
        [bytes.fromhex(line.hash) for line in lines],
    ]


def _refusal(session: UUID, exc: asyncpg.PostgresError) -> ImportRefused:
    if isinstance(exc, asyncpg.InsufficientPrivilegeError):
        return ImportRefused(OWNER_ONLY)
    if isinstance(exc, asyncpg.UniqueViolationError) and "event_id" in str(exc):
        return ImportRefused(
            f"session {session}: an event id of the file is already recorded in another "
            "session of this database"
        )
    if isinstance(exc, asyncpg.UndefinedFunctionError):
        return ImportRefused("this database has no chronicle_import: run `chronicle db migrate`")
    return ImportRefused(f"session {session}: {exc}")


class _Loader:
    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.imported = 0
        self.present = 0
        self.sessions = 0
        self.messages: dict[str, str] = {}

    async def session(self, line: SessionLine, events: list[CheckedEvent]) -> None:
        session = line.session_id
        blobs: dict[str, str] = {}
        for event in events:
            blobs.update(event.blobs)
        if blobs:
            await self.store.put_blobs(blobs)
        if self.messages:
            await self.store.put_messages(list(self.messages), list(self.messages.values()))
            self.messages.clear()
        written = 0
        if events:  # the months the events were recorded in, made if archived meanwhile
            first = min(event.created_at for event in events)
            await ensure_partitions(self.store, months_ahead=0, since=first.astimezone(UTC).date())
        try:
            async with self.store.pool.acquire() as connection, connection.transaction():
                await connection.fetchval(
                    RESTORE_SQL, session, line.events, bytes.fromhex(line.head)
                )
                for chunk in _chunks(events):
                    written += int(
                        await connection.fetchval(IMPORT_SQL, *_arguments(session, chunk)) or 0
                    )
        except asyncpg.PostgresError as exc:
            raise _refusal(session, exc) from None
        self.sessions += 1
        self.imported += written
        self.present += len(events) - written


async def import_file(store: EventStore, path: Path) -> ImportReport:
    """Import every session of the export file at ``path`` (see the module)."""
    report = check_file(path, validate_events=True)
    if not report.ok:
        where = f"line {report.line}: " if report.line else ""
        raise ImportRefused(f"{path}: {where}{report.reason}; nothing was imported")
    loader = _Loader(store)
    session: SessionLine | None = None
    events: list[CheckedEvent] = []
    try:
        for item in checked_events(path, validate_events=True):
            if isinstance(item, SessionLine):
                if session is not None:
                    await loader.session(session, events)
                session, events = item, []
            elif isinstance(item, MessageLine):
                loader.messages[item.hash] = stored_json(item.message)
            elif isinstance(item, CheckedEvent):
                events.append(item)
        if session is not None:
            await loader.session(session, events)
    except FileProblem as problem:  # the file changed since it was checked
        raise ImportRefused(
            f"{path}: {problem}; {loader.sessions} sessions were imported before it"
        ) from None
    return ImportReport(
        sessions=loader.sessions,
        imported=loader.imported,
        present=loader.present,
        messages=report.messages,
        blobs=report.blobs,
    )
