"""Write whole sessions to an export file (app/store/archive/lines.py says what it holds).

Each session is written up to the head its ``sessions`` row names when the export reaches it
(events appended meanwhile belong to a later export), read page by page with blobs resolved.
Every line passes through the same checker as ``chronicle verify --file`` before it is
written, so a session the database holds in a state that does not verify is refused here,
not discovered later in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO
from uuid import UUID

from app.events.stored_form import stored_form
from app.store.archive.checker import FileChecker, FileProblem, FileReport, named_messages
from app.store.archive.lines import (
    EventLine,
    HeaderLine,
    Line,
    MessageLine,
    SessionLine,
    dump_line,
)
from app.store.errors import StoreError
from app.store.records import RecordedEvent

if TYPE_CHECKING:
    from app.store.event_store import EventStore

HEAD_SQL = (
    "SELECT last_seq, last_hash, erased_at, erased_by, erased_policy FROM sessions WHERE id = $1"
)
PAGE_SIZE = 1000


class ExportError(StoreError):
    """A session cannot be exported: it does not exist, or it does not verify."""


class _Output:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.checker = FileChecker()
        self.number = 0

    def write(self, line: Line, session: UUID | None = None) -> None:
        self.number += 1
        try:
            self.checker.feed(self.number, line)
        except FileProblem as problem:
            raise ExportError(
                f"session {session} does not verify in the database ({problem.reason}); "
                f"run `chronicle verify {session}`: nothing after it was written"
            ) from None
        self.out.write(dump_line(line) + "\n")


def _named_messages(events: Sequence[RecordedEvent]) -> list[str]:
    named: list[str] = []
    for event in events:
        if event.kind != "llm.call":
            continue
        for key in named_messages(event.stored_payload):  # not a redacted name
            if key not in named:
                named.append(key)
    return named


async def _write_session(store: EventStore, session: UUID, output: _Output) -> None:
    head = await store._retrying(lambda: store.pool.fetchrow(HEAD_SQL, session))
    if head is None:
        raise ExportError(f"session {session} has no events")
    if head["erased_at"] is not None:
        raise ExportError(
            f"session {session} was erased at {head['erased_at']:%Y-%m-%d %H:%M:%S} UTC by "
            f"{head['erased_by']} (policy {head['erased_policy']}): nothing of it is left to "
            f"export; its tombstone: chronicle verify {session}"
        )
    last_seq = int(head["last_seq"])
    output.write(
        SessionLine(session_id=session, events=last_seq, head=bytes(head["last_hash"]).hex()),
        session,
    )
    after = 0
    while after < last_seq:
        page = await store.read(session, after_seq=after, limit=min(PAGE_SIZE, last_seq - after))
        if not page:
            raise ExportError(
                f"session {session} ends at seq {after} but its sessions row says {last_seq}; "
                f"run `chronicle verify {session}`"
            )
        wanted = [key for key in _named_messages(page) if key not in output.checker.messages]
        if wanted:
            found = await store.read_messages(wanted)
            for key in wanted:
                if key not in found:
                    raise ExportError(
                        f"prompt message {key} of session {session} is missing from the "
                        f"database; run `chronicle verify {session}`"
                    )
                output.write(MessageLine(hash=key, message=stored_form(found[key])), session)
        for event in page:
            output.write(EventLine.of(event), session)
        after = page[-1].seq


async def export_sessions(
    store: EventStore,
    sessions: Sequence[UUID],
    out: TextIO,
    progress: Callable[[int], None] | None = None,
) -> FileReport:
    """Write ``sessions`` to ``out`` as an export file; what was written, as verified.
    ``progress`` is told how many sessions are written after each one (for long runs)."""
    output = _Output(out)
    output.write(HeaderLine())
    for done, session in enumerate(sessions, start=1):
        await _write_session(store, session, output)
        if progress is not None:
            progress(done)
    out.flush()
    return output.checker.finish()
