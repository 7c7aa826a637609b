"""Verify a session completely, and the log as a whole.

Per session, in this order (the first problem is reported): the signatures of the anchors that
name the trusted key, the hash chain (every event re-hashed, seqs gapless, each anchored seq
still holding the signed head), anchored seqs past the end of the log (a truncated or deleted
session), the ``sessions`` row against the events, every prompt message an ``llm.call`` names
and every blob an event refers to (present, re-hashing to its key), and last any anchor signed
by another key (a history re-signed with a key that is not the trusted one, or a forgery): the
rewrite an operator's anchor reveals is reported before the foreign record that hid it.
Events are read as stored (escapes and blob references as the chain covers them), and each
stored text is re-hashed here, not by the database.
Without anchors a writer who recomputes the whole chain and its row goes unseen; with them,
only events appended after the last anchor can be rewritten unseen.

An event appended before migration 0029 (chain 1) whose whole payload was redacted matches
neither chain's hash: it is taken as given only when its payload is one whole-payload marker,
no chain-2 event came before it, and a ``redaction`` record of that digest follows; the next
event links to its stored hash as usual, so its place stays proven, not what went (its note
says ``proof: place``; ``app.events.chain``).

An archived session (``chronicle archive``; its ``sessions`` row records where, when, by whom
and the manifest's sha256) may have lost some or all of its events with the months that were
detached. Its head cannot move once archived (a trigger), so what this database still holds
is checked against it: every event at or below the archived head, each one chained to the one
before it where that one is still here, the last one being the head, and every anchor at or
below the head (at the head, the head itself). The archive proves the rest (``verify --file
DIR``). Events that vanished from a session with no such record are still reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from app.errors import ChronicleError
from app.events.chain import PLACE, whole_marker
from app.events.commitment import (
    RedactionPathError,
    markers_in,
    parse_pointer,
    render_pointer,
)
from app.events.platform_audit import PLATFORM_LOG_ID
from app.events.stored_form import is_encoded, references
from app.store.integrity.anchors import AnchorRecord, anchor_problem, key_id
from app.store.integrity.content_tables import (
    BLOBS,
    MESSAGES,
    fetch_rows,
    named_rows_problem,
    stored_rows_problem,
)
from app.store.integrity.tombstones import Tombstone, tombstone_problem
from app.store.records import (
    ArchiveMark,
    ErasureNote,
    RecordedEvent,
    RedactionNote,
    VerifyReport,
)

if TYPE_CHECKING:
    from app.store.event_store import EventStore

HEAD_SQL = "SELECT created_at, last_seq, last_hash, first_event_at FROM sessions WHERE id = $1"
ARCHIVED_SQL = """
SELECT last_seq, last_hash, archived_at, archived_by, archived_to, archive_manifest
FROM sessions WHERE id = $1 AND archived_at IS NOT NULL
"""
ERASED_SQL = """
SELECT last_seq, last_hash, erased_at, erased_by, erased_policy, tombstone_key,
       tombstone_signature
FROM sessions WHERE id = $1 AND erased_at IS NOT NULL
"""
#: The platform log's record of an erasure (written in the erasure's transaction).
ERASURE_RECORD_SQL = """
SELECT 1 FROM events
WHERE session_id = $1 AND kind = 'audit.session_erased' AND payload ->> 'session_id' = $2
  AND payload ->> 'signature' = $3
"""
ANY_EVENT_SQL = "SELECT seq FROM events WHERE session_id = $1 LIMIT 1"
#: How many times a session that keeps growing while it is verified is read on to its head.
CATCH_UP_ROUNDS = 100
ALL_SESSIONS_SQL = "SELECT id FROM sessions UNION SELECT DISTINCT session_id FROM events"


class BrokenSession(ChronicleError):
    """The first problem found in a session (internal: becomes a failed VerifyReport)."""

    def __init__(self, reason: str, seq: int | None, checked: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.seq = seq
        self.checked = checked


def _prompt_hashes(event: RecordedEvent) -> list[str]:
    payload = event.payload
    named = [*payload.get("prompt", [])]
    if payload.get("tools"):
        named.append(payload["tools"])
    return [h for h in named if isinstance(h, str)]


class _SessionCheck:
    """One pass over one session; raises BrokenSession at the first problem."""

    def __init__(
        self,
        store: EventStore,
        session_id: UUID,
        anchors: Sequence[AnchorRecord],
        trusted: Ed25519PublicKey | None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.anchors = anchors
        self.trusted = trusted
        self.seq = 0
        self.head = b""
        self.first_created_at: Any = None
        #: The least created_at of its events (what the head's first_event_at must not pass).
        self.earliest: Any = None
        #: message hash (hex) -> seq of the first llm.call that names it
        self.messages: dict[str, int] = {}
        #: blob key (hex) -> seq of the first event that refers to it
        self.blobs: dict[str, int] = {}
        #: (seq, JSON Pointer) -> digest of each redaction marker in the events
        self.markers: dict[tuple[int, str], str] = {}
        #: (target seq, JSON Pointer) -> (digest it says went, what ``verify`` reports)
        self.records: dict[tuple[int, str], tuple[str, RedactionNote]] = {}
        #: Chain-1 events redacted whole: their hashes taken as given (see the module).
        self.place_only: set[int] = set()
        self.chain_2_seen = False

    def fail(self, reason: str, seq: int | None) -> BrokenSession:
        return BrokenSession(reason, seq, self.seq if seq is None else min(self.seq, seq - 1))

    async def run(self, page_size: int) -> VerifyReport:
        foreign = self._keep_the_trusted_keys_anchors()
        self._check_signatures()
        anchored: dict[int, list[AnchorRecord]] = {}
        for record in self.anchors:
            anchored.setdefault(record.last_seq, []).append(record)
        erased = await fetch_rows(self.store, ERASED_SQL, self.session_id)
        if erased:
            return await self._erased(erased[0], foreign)
        archived = await fetch_rows(self.store, ARCHIVED_SQL, self.session_id)
        if archived:
            mark = await self._archived_events(page_size, archived[0], anchored)
            if mark.events_here < archived[0]["last_seq"]:
                self._check_no_foreign_anchors(foreign)
                return VerifyReport(
                    session_id=self.session_id,
                    ok=True,
                    checked=mark.events_here,
                    head=bytes(archived[0]["last_hash"]).hex(),
                    anchors=len(self.anchors),
                    archived=mark,
                )
            report = await self.run_whole(page_size, anchored, foreign)
            return report.model_copy(update={"archived": mark})
        return await self.run_whole(page_size, anchored, foreign)

    async def _erased(self, row: Any, foreign: Sequence[AnchorRecord]) -> VerifyReport:
        """An erased session: no event left, a tombstone the trusted key signed, its platform
        log record, and every anchor at or below the signed head (at it, the head itself)."""
        tombstone = Tombstone(
            session_id=self.session_id,
            last_seq=row["last_seq"],
            last_hash=bytes(row["last_hash"]).hex(),
            erased_at=row["erased_at"],
            erased_by=row["erased_by"],
            policy=row["erased_policy"],
            key_id=row["tombstone_key"],
            signature=row["tombstone_signature"],
        )
        left = await fetch_rows(self.store, ANY_EVENT_SQL, self.session_id)
        if left:
            raise self.fail(
                f"the session is marked erased but still has events (seq {left[0]['seq']})", None
            )
        if self.trusted is not None:
            problem = tombstone_problem(tombstone, self.trusted)
            if problem is not None:
                raise self.fail(problem, None)
        recorded = await fetch_rows(
            self.store,
            ERASURE_RECORD_SQL,
            PLATFORM_LOG_ID,
            str(self.session_id),
            tombstone.signature,
        )
        if not recorded:
            raise self.fail(
                "its tombstone has no audit.session_erased record in the platform log (the "
                "session was deleted, or the tombstone written, behind the log's back)",
                None,
            )
        for record in self.anchors:
            if record.last_seq > tombstone.last_seq:
                raise self.fail(
                    f"seq {record.last_seq} was anchored at {_when(record)} but the tombstone "
                    f"says the session had {tombstone.last_seq} events",
                    None,
                )
            if record.last_seq == tombstone.last_seq and record.head != tombstone.last_hash:
                raise self.fail(
                    f"the anchor of seq {record.last_seq} signed another head than the tombstone's",
                    None,
                )
        self._check_no_foreign_anchors(foreign)
        return VerifyReport(
            session_id=self.session_id,
            ok=True,
            checked=0,
            head=tombstone.last_hash,
            anchors=len(self.anchors),
            erased=ErasureNote(
                events=tombstone.last_seq,
                last_hash=tombstone.last_hash,
                erased_at=tombstone.erased_at,
                erased_by=tombstone.erased_by,
                policy=tombstone.policy,
                key_id=tombstone.key_id,
                signature_checked=self.trusted is not None,
            ),
        )

    async def _archived_events(
        self, page_size: int, row: Any, anchored: dict[int, list[AnchorRecord]]
    ) -> ArchiveMark:
        """What this database still holds of an archived session, checked against its
        archived head (see the module); a fresh check object reads it again if it is whole."""
        last_seq, last_hash = int(row["last_seq"]), bytes(row["last_hash"])
        after, here = 0, 0
        previous: RecordedEvent | None = None
        chain_2_seen = False
        #: chain-1 events redacted whole -> their digest, and the whole redactions recorded
        taken: dict[int, str] = {}
        recorded: set[tuple[Any, Any]] = set()
        while True:
            page = await self.store.read(
                self.session_id,
                after_seq=after,
                limit=page_size,
                resolve_blobs=False,
                trust_head=False,
            )
            for event in page:
                if event.seq > last_seq:
                    raise self.fail(
                        f"event {event.seq} is past the head {last_seq} the session was "
                        "archived with",
                        event.seq,
                    )
                chained = previous is not None and previous.seq == event.seq - 1
                if chained or event.seq == 1:
                    before = previous.hash if chained and previous is not None else b""
                    chain = event.chain(before)
                    digest = whole_marker(event.stored_payload) if chain is None else None
                    if chain is None and (digest is None or chain_2_seen):
                        raise self.fail(f"event {event.seq} does not match its hash", event.seq)
                    if digest is not None:
                        taken[event.seq] = digest
                    chain_2_seen = chain_2_seen or chain == 2
                if event.kind == "redaction" and not event.payload.get("path"):
                    recorded.add((event.payload.get("target_seq"), event.payload.get("removed")))
                for record in anchored.get(event.seq, ()):
                    if record.head != event.hash.hex():
                        raise self.fail(
                            f"event {event.seq} is not the one anchored at {_when(record)}",
                            event.seq,
                        )
                previous, here = event, here + 1
            if len(page) < page_size:
                break
            after = page[-1].seq
        for seq, digest in taken.items():
            if (seq, digest) not in recorded:
                raise self.fail(
                    f"event {seq} does not match its hash, and no redaction event records its "
                    "whole payload's removal",
                    seq,
                )
        if previous is not None and previous.seq == last_seq and previous.hash != last_hash:
            raise self.fail(
                f"event {last_seq} is not the head the session was archived with", last_seq
            )
        for record in self.anchors:
            if record.last_seq > last_seq or (
                record.last_seq == last_seq and record.head != last_hash.hex()
            ):
                raise self.fail(
                    f"seq {record.last_seq} was anchored at {_when(record)} with another head "
                    f"than the session was archived with (seq {last_seq})",
                    None,
                )
        return ArchiveMark(
            archived_at=row["archived_at"],
            archived_by=row["archived_by"],
            archived_to=row["archived_to"],
            manifest=bytes(row["archive_manifest"]).hex(),
            events=last_seq,
            events_here=here,
        )

    async def run_whole(
        self,
        page_size: int,
        anchored: dict[int, list[AnchorRecord]],
        foreign: Sequence[AnchorRecord],
    ) -> VerifyReport:
        """Every event from seq 1, the head row, the named rows and the anchors."""
        await self._read_to_end(page_size, anchored)
        row = await self._head_after_catching_up(page_size, anchored)
        self._check_nothing_anchored_beyond_the_end()
        self._check_sessions_row(row)
        redactions = self._check_redactions()
        await self._check_named_rows()
        self._check_no_foreign_anchors(foreign)
        return VerifyReport(
            session_id=self.session_id,
            ok=True,
            checked=self.seq,
            head=self.head.hex() if self.seq else None,
            messages=len(self.messages),
            blobs=len(self.blobs),
            anchors=len(self.anchors),
            redactions=redactions,
        )

    async def _read_to_end(self, page_size: int, anchored: dict[int, list[AnchorRecord]]) -> None:
        while True:
            page = await self.store.read(
                self.session_id,
                after_seq=self.seq,
                limit=page_size,
                resolve_blobs=False,
                trust_head=False,
            )
            for event in page:
                self._check_event(event, anchored.get(event.seq, ()))
            if len(page) < page_size:
                return

    async def _head_after_catching_up(
        self, page_size: int, anchored: dict[int, list[AnchorRecord]]
    ) -> Any:
        """The sessions row, read after the events. An append moves the head in the
        transaction that adds its events, so a head past what was read means the session grew
        meanwhile (a live session): those events are read too, until the head is reached or
        no new event comes (then the head is ahead of the log, which the row check reports)."""
        for _ in range(CATCH_UP_ROUNDS):
            rows = await fetch_rows(self.store, HEAD_SQL, self.session_id)
            row = rows[0] if rows else None
            if row is None or row["last_seq"] <= self.seq:
                return row
            before = self.seq
            await self._read_to_end(page_size, anchored)
            if self.seq == before:
                return row
        rows = await fetch_rows(self.store, HEAD_SQL, self.session_id)
        return rows[0] if rows else None

    def _keep_the_trusted_keys_anchors(self) -> list[AnchorRecord]:
        """Check against the records that name the trusted key; return the others."""
        if not self.anchors:
            return []
        if self.trusted is None:
            raise ValueError("anchors need the trusted public key to be checked")
        trusted_id = key_id(self.trusted)
        foreign = [record for record in self.anchors if record.key_id != trusted_id]
        self.anchors = [record for record in self.anchors if record.key_id == trusted_id]
        return foreign

    def _check_no_foreign_anchors(self, foreign: Sequence[AnchorRecord]) -> None:
        if not foreign:
            return
        assert self.trusted is not None
        problem = anchor_problem(foreign[0], self.trusted)
        others = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise self.fail(
            f"{problem}{others}; pass the signer's public key with --public-key if it is yours",
            None,
        )

    def _check_signatures(self) -> None:
        if self.trusted is None:
            return
        for record in self.anchors:
            problem = anchor_problem(record, self.trusted)
            if problem is not None:
                raise BrokenSession(problem, None, 0)

    def _check_event(self, event: RecordedEvent, anchors: Iterable[AnchorRecord]) -> None:
        expected = self.seq + 1
        if event.seq != expected:
            raise self.fail(f"seq {expected} is missing", expected)
        chain = event.chain(self.head)
        if chain is None:
            if self.chain_2_seen or whole_marker(event.stored_payload) is None:
                raise self.fail(f"event {event.seq} does not match its hash", event.seq)
            self.place_only.add(event.seq)  # its record is checked at the end
        self.chain_2_seen = self.chain_2_seen or chain == 2
        head = event.hash
        for record in anchors:
            if record.head != event.hash.hex():
                raise self.fail(
                    f"event {event.seq} is not the one anchored at {_when(record)}: its hash "
                    "differs from the signed head (the log was rewritten)",
                    event.seq,
                )
        self.seq, self.head = event.seq, head
        if self.first_created_at is None:
            self.first_created_at = event.created_at
        if self.earliest is None or event.created_at < self.earliest:
            self.earliest = event.created_at
        if event.kind == "llm.call":
            for key in _prompt_hashes(event):
                self.messages.setdefault(key, event.seq)
        if is_encoded(event.payload):
            for key in references(event.payload):
                self.blobs.setdefault(key, event.seq)
            for pointer, digest in markers_in(event.stored_payload):
                self.markers[(event.seq, pointer)] = digest
        if event.kind == "redaction":
            self._note_redaction(event)

    def _note_redaction(self, event: RecordedEvent) -> None:
        """Keep what a ``redaction`` event says went (checked against the markers at the
        end: ``_check_redactions``)."""
        payload = event.payload
        try:
            target, removed = int(payload["target_seq"]), str(payload["removed"])
            path = render_pointer(parse_pointer(str(payload.get("path", ""))))
        except (KeyError, TypeError, ValueError, RedactionPathError):
            raise self.fail(f"redaction event {event.seq} is not one", event.seq) from None
        if target >= event.seq:
            raise self.fail(
                f"redaction event {event.seq} names event {target}, which is not before it",
                event.seq,
            )
        note = RedactionNote(
            seq=target,
            path=path,
            by=payload.get("user"),
            at=event.created_at,
            reason=str(payload.get("reason", "")),
            recorded_at_seq=event.seq,
        )
        self.records[(target, path)] = (removed, note)

    def _check_redactions(self) -> list[RedactionNote]:
        """Each marker has the record that made it, and each record its marker: content that
        went without a record, or came back after one, is tampering."""
        for (seq, path), digest in sorted(self.markers.items()):
            recorded = self.records.get((seq, path))
            if recorded is None and seq in self.place_only:
                raise self.fail(
                    f"event {seq} does not match its hash: its payload was replaced by a marker "
                    "with no redaction event recording it (changed behind the log's back)",
                    seq,
                )
            if recorded is None:
                where = f"{path} " if path else ""
                raise self.fail(
                    f"event {seq} had {where}removed with no redaction event recording it "
                    "(removed behind the log's back)",
                    seq,
                )
            if recorded[0] != digest:
                raise self.fail(
                    f"event {seq}'s redaction at {path or 'its payload'} is not what redaction "
                    f"event {recorded[1].recorded_at_seq} records",
                    seq,
                )
        for (seq, path), (_, note) in sorted(self.records.items()):
            if (seq, path) not in self.markers:
                raise self.fail(
                    f"redaction event {note.recorded_at_seq} records {note.describe()}, but "
                    "that content is there (put back, or never removed)",
                    note.recorded_at_seq,
                )
        return [
            note.model_copy(update={"proof": PLACE}) if seq in self.place_only else note
            for (seq, _), (_, note) in sorted(self.records.items())
        ]

    def _check_nothing_anchored_beyond_the_end(self) -> None:
        beyond = [record for record in self.anchors if record.last_seq > self.seq]
        if not beyond:
            return
        latest = max(beyond, key=lambda record: record.last_seq)
        gone = " (the session is gone)" if self.seq == 0 else ""
        raise self.fail(
            f"seq {latest.last_seq} was anchored at {_when(latest)} but "
            f"the log ends at seq {self.seq}: events were removed{gone}",
            self.seq + 1,
        )

    def _check_sessions_row(self, row: Any) -> None:
        if self.seq == 0:
            if row is not None:
                raise self.fail(
                    f"the session head says seq {row['last_seq']} but the log has no events "
                    "(events removed?)",
                    1,
                )
            return
        if row is None:
            raise self.fail(
                f"the session's row in the sessions table is missing (deleted?), though it has "
                f"{self.seq} events",
                None,
            )
        if (row["last_seq"], row["last_hash"]) != (self.seq, self.head):
            raise BrokenSession(
                f"the session head says seq {row['last_seq']} but the log ends at {self.seq} "
                "(events removed, or the head changed?)",
                self.seq + 1 if row["last_seq"] > self.seq else self.seq,
                self.seq,
            )
        if row["created_at"] != self.first_created_at:
            raise self.fail(
                f"the session's row says it was created at {row['created_at']}, its first event "
                f"at {self.first_created_at} (the row was changed)",
                None,
            )
        # Reads name the months from the head's first event time on (migration 0026): one
        # set later would hide the earlier events from every reader but verify.
        if row["first_event_at"] is not None and row["first_event_at"] > self.earliest:
            raise self.fail(
                f"the session's row says its first event is of {row['first_event_at']}, but one "
                f"is of {self.earliest}: reads would leave it out (the row was changed)",
                None,
            )

    async def _check_named_rows(self) -> None:
        for table, named in ((MESSAGES, self.messages), (BLOBS, self.blobs)):
            problem = await named_rows_problem(self.store, table, named)
            if problem is not None:
                raise self.fail(problem, None)


def _when(record: AnchorRecord) -> str:
    return record.anchored_at.strftime("%Y-%m-%d %H:%M:%S UTC")


async def verify_session(
    store: EventStore,
    session_id: UUID,
    *,
    anchors: Sequence[AnchorRecord] = (),
    trusted: Ed25519PublicKey | None = None,
    page_size: int = 5000,
) -> VerifyReport:
    """Check one session (see the module's docstring); the report names the first problem."""
    strays = {record.session_id for record in anchors} - {session_id}
    if strays:
        raise ValueError(f"anchors of other sessions given to verify {session_id}: {strays}")
    check = _SessionCheck(store, session_id, anchors, trusted)
    try:
        return await check.run(page_size)
    except BrokenSession as broken:
        return VerifyReport(
            session_id=session_id,
            ok=False,
            checked=broken.checked,
            first_bad_seq=broken.seq,
            reason=broken.reason,
            anchors=len(anchors),
        )


async def session_ids(store: EventStore) -> list[UUID]:
    """Every session that has a row or an event."""
    rows = await fetch_rows(store, ALL_SESSIONS_SQL)
    return sorted(row["id"] for row in rows)


async def stored_blob_problem(store: EventStore, page_size: int = 100) -> tuple[int, str | None]:
    """(blobs checked, the first one that does not re-hash to its key, or None)."""
    return await stored_rows_problem(store, BLOBS, page_size)


async def stored_message_problem(
    store: EventStore, page_size: int = 1000
) -> tuple[int, str | None]:
    """(messages checked, the first one that does not re-hash to its key, or None)."""
    return await stored_rows_problem(store, MESSAGES, page_size)
