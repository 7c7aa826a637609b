"""The lines of an export file: whole sessions as JSON lines, verifiable without a database.

::

    {"format":"chronicle.sessions","type":"header","version":1}
    {"events":N,"head":"<sha256 hex>","session_id":"...","type":"session"}
    {"hash":"<sha256 hex>","message":{...},"type":"message"}
    {"cause":null,"created_at":"2026-...Z","event_id":"...","hash":"...","kind":"...",
     "payload":{...},"schema_version":1,"seq":1,"session_id":"...","source":"...","type":"event"}

A ``session`` line opens each session's block: its events follow (seq 1 to N, the last one's
hash is ``head``), each prompt message (``message``, in stored form, keyed by the sha256 of its
canonical text) before the first ``llm.call`` that names it. An event line holds every column
its hash covers, with ``payload`` whole (blobs resolved, escapes undone) for readers, and
``stored_payload`` — what the chain covers, with its ``$blob``/``$esc``/``$obj`` markers —
only where that differs. The blobs' texts are not repeated: they are the payload's strings
(app/store/archive/checker.py finds them by hash). ``global_position`` and ``tx`` are not
written: they are one database's positions, given anew on import, and no hash covers them.

Keys are sorted and nothing depends on when or from where a file was written, so exporting
what an import loaded gives the same bytes.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from app.errors import ChronicleError
from app.events.canonical import format_timestamp
from app.store.records import RecordedEvent

FORMAT = "chronicle.sessions"
VERSION = 1
Sha256Hex = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]


class LineError(ChronicleError, ValueError):
    """A line that is not a line of this format (its reason, without the line number)."""


class _Line(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HeaderLine(_Line):
    type: Literal["header"] = "header"
    format: Literal["chronicle.sessions"] = "chronicle.sessions"
    version: Literal[1] = 1


class SessionLine(_Line):
    type: Literal["session"] = "session"
    session_id: UUID
    #: Events of the session in the file: seq 1 to ``events``.
    events: int = Field(ge=1)
    #: Hash of its last event.
    head: Sha256Hex


class MessageLine(_Line):
    type: Literal["message"] = "message"
    hash: Sha256Hex
    #: Stored form, as llm_messages holds it.
    message: Any


class EventLine(_Line):
    type: Literal["event"] = "event"
    session_id: UUID
    seq: int = Field(ge=1)
    event_id: UUID
    #: UTC with microseconds, as the hash covers it (``2026-01-02T03:04:05.000006Z``).
    created_at: str
    kind: str
    source: str
    cause: int | None
    schema_version: int
    #: Whole: blobs resolved, escapes undone.
    payload: dict[str, Any]
    #: The stored form when it differs from ``payload`` (what the hash chain covers).
    stored_payload: dict[str, Any] | None = None
    hash: Sha256Hex

    @classmethod
    def of(cls, event: RecordedEvent) -> EventLine:
        stored = event.stored_payload
        return cls.model_construct(
            session_id=event.session_id,
            seq=event.seq,
            event_id=event.event_id,
            created_at=format_timestamp(event.created_at),
            kind=event.kind,
            source=event.source,
            cause=event.cause,
            schema_version=event.schema_version,
            payload=event.payload,
            stored_payload=None if stored is event.payload else stored,
            hash=event.hash.hex(),
        )

    @property
    def stored(self) -> dict[str, Any]:
        """The payload as the log stores it and the chain covers it."""
        return self.payload if self.stored_payload is None else self.stored_payload

    def created(self) -> datetime:
        """``created_at`` as a time; raises ``LineError`` unless it is in the hashed form."""
        try:
            moment = datetime.fromisoformat(self.created_at)
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None or format_timestamp(moment) != self.created_at:
            raise LineError(
                f"created_at {self.created_at!r} is not a UTC time with microseconds "
                "(2026-01-02T03:04:05.000006Z)"
            )
        return moment


Line = HeaderLine | SessionLine | MessageLine | EventLine
_adapter: TypeAdapter[Line] = TypeAdapter(
    Annotated[Line, Field(discriminator="type")]  # type: ignore[arg-type]
)


def parse_line(text: str) -> Line:
    """One line of the file; raises ``LineError`` saying what is wrong with it."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LineError(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("type") not in (
        "header",
        "session",
        "message",
        "event",
    ):
        raise LineError("not a line of a Chronicle export (no known 'type')")
    try:
        return _adapter.validate_python(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'][1:]) or 'line'}: {error['msg']}"
            for error in exc.errors()
        )
        raise LineError(f"not a valid {data['type']} line ({problems})") from None


def _fields(line: Line) -> dict[str, Any]:
    if isinstance(line, EventLine):
        fields: dict[str, Any] = {
            "type": line.type,
            "session_id": str(line.session_id),
            "seq": line.seq,
            "event_id": str(line.event_id),
            "created_at": line.created_at,
            "kind": line.kind,
            "source": line.source,
            "cause": line.cause,
            "schema_version": line.schema_version,
            "payload": line.payload,
            "hash": line.hash,
        }
        if line.stored_payload is not None:
            fields["stored_payload"] = line.stored_payload
        return fields
    if isinstance(line, SessionLine):
        return {
            "type": line.type,
            "session_id": str(line.session_id),
            "events": line.events,
            "head": line.head,
        }
    if isinstance(line, MessageLine):
        return {"type": line.type, "hash": line.hash, "message": line.message}
    return {"type": line.type, "format": line.format, "version": line.version}


def dump_line(line: Line) -> str:
    """The line's JSON text: keys sorted, compact, UTF-8 (``\\u`` escapes only for text UTF-8
    cannot hold, such as a lone surrogate a payload may keep)."""
    fields = _fields(line)
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text
