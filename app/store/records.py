"""What the store hands back: recorded events, global cursor positions, verification reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NamedTuple
from uuid import UUID

from pydantic import BaseModel

from app.events import Event, event_from_stored, hashed_document
from app.events.chain import chain_of
from app.events.stored_form import stored_form


class Position(NamedTuple):
    """A place in the global log: ``(tx, global_position)``, compared as a pair.

    ``global_position`` alone is not a safe cursor: a transaction that took a smaller
    position can commit after a larger one is already visible.
    """

    tx: int
    global_position: int

    @classmethod
    def origin(cls) -> Position:
        return cls(0, 0)


class RecordedEvent(NamedTuple):
    """One row of the events table, immutable.

    A typed NamedTuple rather than a pydantic model: rows come from the database already
    typed, and building one is ~20x cheaper, which is what lets a long session be read at
    well over 100,000 events/s. ``event()`` gives the validated pydantic event.
    """

    global_position: int
    session_id: UUID
    seq: int
    event_id: UUID
    tx: int
    kind: str
    source: str
    cause: int | None
    payload: dict[str, Any]
    schema_version: int
    created_at: datetime
    hash: bytes

    @property
    def position(self) -> Position:
        return Position(self.tx, self.global_position)

    @property
    def stored_payload(self) -> Any:
        """The payload as the ``payload`` column holds it: what the hash chain covers."""
        return stored_form(self.payload)

    def event(self) -> Event:
        """The typed event (``Message``, ``Run``, ...), upcast to the current schema (of a
        whole payload: not of one read with ``resolve_blobs=False``)."""
        return event_from_stored(
            kind=self.kind,
            source=self.source,
            cause=self.cause,
            event_id=self.event_id,
            payload=self.payload,
            schema_version=self.schema_version,
        )

    def hashed_fields(self) -> dict[str, Any]:
        """What this event's hash covers besides the previous event's hash (the document of
        either chain is made from these: ``app.events.chain``)."""
        return {
            "session_id": str(self.session_id),
            "seq": self.seq,
            "event_id": str(self.event_id),
            "kind": self.kind,
            "source": self.source,
            "cause": self.cause,
            "payload": self.stored_payload,
            "schema_version": self.schema_version,
            "created_at": self.created_at,
        }

    def hashed_document(self) -> str:
        """The chain-1 text (over the payload itself: events appended before 0029)."""
        return hashed_document(**self.hashed_fields())

    def chain(self, previous: bytes) -> int | None:
        """Under which chain this event's hash links it to ``previous`` (None: neither)."""
        return chain_of(previous, self.hash, **self.hashed_fields())

    def to_json_dict(self) -> dict[str, Any]:
        """The table's columns as JSON-ready values (hash as hex)."""
        return {
            "global_position": self.global_position,
            "session_id": str(self.session_id),
            "seq": self.seq,
            "event_id": str(self.event_id),
            "tx": self.tx,
            "kind": self.kind,
            "source": self.source,
            "cause": self.cause,
            "payload": self.payload,
            "schema_version": self.schema_version,
            "created_at": self.created_at.isoformat(),
            "hash": self.hash.hex(),
        }


class ArchiveMark(BaseModel):
    """Where an archived session went (its ``sessions`` row: migration 0027)."""

    archived_at: datetime
    archived_by: str
    archived_to: str
    #: sha256 hex of the archive's manifest.json.
    manifest: str
    #: Its events when it was archived (its head's seq, which cannot move since).
    events: int
    #: Its events this database still holds (0 once their months are detached).
    events_here: int


class RedactionNote(BaseModel):
    """A recorded redaction, as ``verify`` reports it apart from tampering."""

    seq: int
    path: str
    by: str | None
    at: datetime
    reason: str
    #: The seq of the ``redaction`` event that records it.
    recorded_at_seq: int
    #: What it proves: ``content``, the event's place and what was removed (its marker's
    #: digest is in the commitment its hash covers), or ``place`` alone (an event appended
    #: before migration 0029, redacted whole: its hash is taken as given; app/events/chain.py).
    proof: Literal["content", "place"] = "content"

    def describe(self) -> str:
        where = f"seq {self.seq}" + (f" {self.path}" if self.path else "")
        proves = (
            " (recorded before the upgrade: proves its place, not what was removed)"
            if self.proof == "place"
            else ""
        )
        return f"{where} redacted by {self.by or 'unknown'} at {self.at.isoformat()}{proves}"


class ErasureNote(BaseModel):
    """An erased session's tombstone, as ``verify`` reports it apart from a deletion."""

    events: int
    last_hash: str
    erased_at: datetime
    erased_by: str
    policy: str
    key_id: str
    #: Whether the signature was checked with a trusted key (``verify --public-key``,
    #: ``--anchors``); without one it is reported, not proven.
    signature_checked: bool

    def describe(self) -> str:
        checked = "signed" if self.signature_checked else "signature not checked"
        return (
            f"erased by {self.erased_by} at {self.erased_at.isoformat()} under policy "
            f"{self.policy}: {self.events} events, last hash {self.last_hash[:16]}... ({checked})"
        )


class VerifyReport(BaseModel):
    """Result of checking one session: its chain, its sessions row, its prompt messages and
    the anchors given; ``reason`` names the first problem (``first_bad_seq`` when it has one)."""

    session_id: UUID
    ok: bool
    #: Events verified (before the problem, if any).
    checked: int
    first_bad_seq: int | None = None
    reason: str = ""
    #: sha256 hex of the last verified event: what an anchor signs.
    head: str | None = None
    #: Distinct prompt messages (and tool lists) checked.
    messages: int = 0
    #: Distinct blobs the events refer to, checked.
    blobs: int = 0
    #: Anchor records checked.
    anchors: int = 0
    #: Parts of events removed with a record of it (not tampering): who, when, why.
    redactions: list[RedactionNote] = []
    #: Set when the session was archived (``chronicle archive``): its events may be gone from
    #: this database, and the archive is their proof (``verify --file DIR``).
    archived: ArchiveMark | None = None
    #: Set when the session was erased: its events are gone on purpose, its tombstone stays.
    erased: ErasureNote | None = None
