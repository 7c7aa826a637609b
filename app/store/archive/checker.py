"""Verify an export file without a database, and name its first bad line.

Per session block, as ``chronicle verify`` does in the database: seqs gapless from 1, every
event re-hashed over its stored form and chained to the one before, the block ending at the
head its ``session`` line names; every prompt message an ``llm.call`` names present before it
and re-hashing to its key; and the whole ``payload`` of each event agreeing with its stored
form: each blob the stored form refers to must be a string of the payload that hashes to the
blob's key, and restoring the stored form must give the payload exactly. So no byte of an
event line can change unseen — the hash covers the stored form, and the stored form pins the
payload. One exception, as in the database: an event appended before migration 0029 (chain 1)
whose whole payload was redacted matches neither chain; its hash is taken as given when its
payload is one whole-payload marker, no chain-2 event of its session came before it, and a
``redaction`` line of that digest (path "") follows in the block (``app.events.chain``).

The same checker runs while a file is written (an export never writes a session that does
not verify) and before anything of a file is imported.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple
from uuid import UUID

from pydantic import BaseModel

from app.errors import ChronicleError
from app.events import EVENT_TYPES, InvalidEventError, event_from_stored
from app.events.canonical import CanonicalJsonError, stored_json
from app.events.chain import chain_of, whole_marker
from app.events.commitment import markers_in
from app.events.stored_form import (
    StoredFormError,
    escape_text,
    holds_markers,
    needs_escape,
    references,
    restore,
)
from app.events.workspace import WorkspaceSnapshot, unsafe_start
from app.store.archive.lines import (
    EventLine,
    HeaderLine,
    Line,
    LineError,
    MessageLine,
    SessionLine,
    parse_line,
)

#: A blob holds more than the smallest blob threshold (1024 bytes of UTF-8): 256 characters.
SHORTEST_BLOB_CHARS = 256


class FileProblem(ChronicleError):
    """The first problem of a file: its line number (1-based) and what is wrong there."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class CheckedSession(BaseModel):
    session_id: UUID
    events: int
    head: str


class FileReport(BaseModel):
    """What ``chronicle verify --file`` found: every session, or the first bad line."""

    ok: bool
    sessions: list[CheckedSession]
    messages: int = 0
    blobs: int = 0
    line: int | None = None
    reason: str = ""


class CheckedEvent(NamedTuple):
    """An event line that verified, with what an import needs besides the line."""

    line: EventLine
    created_at: datetime
    #: Canonical text of its stored payload (what the database hashes).
    stored_text: str
    #: The texts of the blobs its stored form refers to, by sha256 hex.
    blobs: dict[str, str]
    #: A chain-1 event redacted whole: its hash taken as given (its record follows).
    taken_as_given: bool = False


@dataclass
class _Block:
    session_id: UUID
    events: int
    head: str
    line: int
    seq: int = 0
    chain: bytes = b""
    chain_2_seen: bool = False
    #: seq -> (digest, line) of each event taken as given whose record has not come yet
    unrecorded: dict[int, tuple[str, int]] = field(default_factory=dict)


@dataclass
class FileChecker:
    """Feed it the lines in order; it raises ``FileProblem`` at the first bad one."""

    #: Also validate each event against its kind's schema (an import does; verification of
    #: integrity alone need not know every kind).
    validate_events: bool = False
    sessions: list[CheckedSession] = field(default_factory=list)
    messages: set[str] = field(default_factory=set)
    blobs: set[str] = field(default_factory=set)
    _header: bool = False
    _block: _Block | None = None
    _seen: set[UUID] = field(default_factory=set)
    _last: int = 0

    def feed(self, number: int, line: Line) -> CheckedEvent | None:
        self._last = number
        if not self._header:
            if not isinstance(line, HeaderLine):
                raise FileProblem(number, "the file does not start with a Chronicle export header")
            self._header = True
            return None
        if isinstance(line, HeaderLine):
            raise FileProblem(number, "a second header (two files joined?)")
        if isinstance(line, SessionLine):
            self._open(number, line)
            return None
        if isinstance(line, MessageLine):
            self._message(number, line)
            return None
        return self._event(number, line)

    def finish(self) -> FileReport:
        if not self._header:
            raise FileProblem(max(self._last, 1), "the file is empty")
        self._close(self._last + 1)
        return FileReport(
            ok=True, sessions=self.sessions, messages=len(self.messages), blobs=len(self.blobs)
        )

    def _open(self, number: int, line: SessionLine) -> None:
        self._close(number)
        if line.session_id in self._seen:
            raise FileProblem(number, f"session {line.session_id} appears a second time")
        self._seen.add(line.session_id)
        self._block = _Block(line.session_id, line.events, line.head, number)

    def _close(self, number: int) -> None:
        block = self._block
        if block is None:
            return
        if block.seq != block.events:
            raise FileProblem(
                number,
                f"session {block.session_id} ends after {block.seq} of the {block.events} "
                f"events its session line (line {block.line}) names: lines are missing",
            )
        for seq, (_, line) in sorted(block.unrecorded.items())[:1]:
            raise FileProblem(
                line,
                f"event {seq} of session {block.session_id} does not match its hash, and no "
                "redaction event of the session records its whole payload's removal",
            )
        if block.chain.hex() != block.head:
            raise FileProblem(
                number,
                f"session {block.session_id}'s events end at hash {block.chain.hex()}, not at "
                f"the head {block.head} its session line (line {block.line}) names",
            )
        self.sessions.append(CheckedSession(session_id=block.session_id, events=block.seq,
                                            head=block.head))  # fmt: skip
        self._block = None

    def _message(self, number: int, line: MessageLine) -> None:
        try:
            key = hashlib.sha256(stored_json(line.message).encode("utf-8")).hexdigest()
        except CanonicalJsonError as exc:
            raise FileProblem(
                number, f"prompt message {line.hash} cannot be stored ({exc})"
            ) from None
        if key != line.hash:
            raise FileProblem(number, f"prompt message {line.hash} does not match its hash")
        self.messages.add(line.hash)

    def _event(self, number: int, line: EventLine) -> CheckedEvent:
        block = self._block
        if block is None or line.session_id != block.session_id:
            raise FileProblem(
                number, f"an event of session {line.session_id} outside that session's block"
            )
        if line.seq != block.seq + 1:
            raise FileProblem(
                number,
                f"event seq {line.seq} of session {block.session_id} where seq {block.seq + 1} "
                "belongs: events are missing, repeated or out of order",
            )
        if line.seq > block.events:
            raise FileProblem(
                number,
                f"session {block.session_id} has more events than the {block.events} its "
                f"session line (line {block.line}) names",
            )
        try:
            created_at = line.created()
        except LineError as exc:
            raise FileProblem(number, str(exc)) from None
        try:
            stored_text = stored_json(line.stored)
        except CanonicalJsonError:
            raise FileProblem(
                number,
                f"event {line.seq}'s payload holds text the log cannot store (NUL, a lone "
                "surrogate) and the line has no stored_payload",
            ) from None
        fields = {
            "session_id": str(line.session_id),
            "seq": line.seq,
            "event_id": str(line.event_id),
            "kind": line.kind,
            "source": line.source,
            "cause": line.cause,
            "payload": line.stored,
            "schema_version": line.schema_version,
            "created_at": created_at,
        }
        try:
            expected = bytes.fromhex(line.hash)
        except ValueError:
            expected = b""
        chain = chain_of(block.chain, expected, **fields)
        digest = whole_marker(line.stored) if chain is None else None
        if chain is None and (digest is None or block.chain_2_seen):
            raise FileProblem(
                number, f"event {line.seq} of session {block.session_id} does not match its hash"
            )
        if digest is not None:
            block.unrecorded[line.seq] = (digest, number)
        block.chain_2_seen = block.chain_2_seen or chain == 2
        if line.kind == "redaction":
            self._recorded(number, line, block)
        blobs = self._payload_agrees(number, line, stored_text)
        if line.kind == "llm.call":
            self._messages_present(number, line)
        if self.validate_events:
            self._valid(number, line)
        block.seq, block.chain = line.seq, expected
        self.blobs.update(blobs)
        return CheckedEvent(line, created_at, stored_text, blobs, digest is not None)

    @staticmethod
    def _recorded(number: int, line: EventLine, block: _Block) -> None:
        """A ``redaction`` line: the record of an event taken as given, if it names one."""
        target, path = line.payload.get("target_seq"), line.payload.get("path")
        if path or target not in block.unrecorded:
            return
        digest, _ = block.unrecorded.pop(target)
        if line.payload.get("removed") != digest:
            raise FileProblem(
                number,
                f"redaction event {line.seq} of session {block.session_id} records another "
                f"digest than event {target}'s payload holds",
            )

    def _payload_agrees(self, number: int, line: EventLine, stored_text: str) -> dict[str, str]:
        """The payload is what the stored form stands for; the texts of its blobs."""
        if line.stored_payload is None and not holds_markers(stored_text):
            return {}
        blobs = _blob_texts(line.stored, line.payload)
        try:
            restored = restore(line.stored, blobs)
        except KeyError as missing:
            raise FileProblem(
                number,
                f"event {line.seq}'s payload does not hold the text of blob {missing.args[0]} "
                "that its stored form refers to (payload changed?)",
            ) from None
        except StoredFormError as exc:
            raise FileProblem(
                number, f"event {line.seq}'s stored form is malformed: {exc}"
            ) from None
        if _exact(restored) != _exact(line.payload):
            what = "its stored form" if line.stored_payload is not None else "the payload itself"
            raise FileProblem(
                number,
                f"event {line.seq}'s payload is not what {what} stands for (payload changed?)",
            )
        return blobs

    def _messages_present(self, number: int, line: EventLine) -> None:
        for key in named_messages(line.stored):
            if key not in self.messages:
                raise FileProblem(
                    number,
                    f"the llm.call at seq {line.seq} names prompt message {key}, which no "
                    "earlier line holds",
                )

    def _valid(self, number: int, line: EventLine) -> None:
        """The event fits its kind's schema; a redacted one need only be of a known kind (a
        placeholder, ``{}`` for a whole payload, need not fit it, and nothing restores it:
        a fork or replay stops at a redacted part)."""
        try:
            event = event_from_stored(
                kind=line.kind,
                source=line.source,
                cause=line.cause,
                event_id=line.event_id,
                payload=line.payload,
                schema_version=line.schema_version,
            )
        except (InvalidEventError, ValueError) as exc:
            if line.kind in EVENT_TYPES and markers_in(line.stored):
                return
            raise FileProblem(number, f"event {line.seq}: {exc}") from None
        if isinstance(event, WorkspaceSnapshot):  # restoring it (a fork) writes on this host
            problem = unsafe_start(event)
            if problem is not None:
                raise FileProblem(
                    number,
                    f"session {line.session_id}, event {line.seq}: the workspace.snapshot "
                    f"cannot be restored safely: {problem}",
                )


def named_messages(stored: Any) -> list[str]:
    """The prompt messages (and tool list) an ``llm.call`` names, by key, read from its
    stored payload: a name that was redacted (a marker in its place) names nothing."""
    if not isinstance(stored, dict):
        return []
    prompt = stored.get("prompt")
    names = [*(prompt if isinstance(prompt, list) else []), stored.get("tools")]
    return [key for key in names if isinstance(key, str) and key]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _blob_texts(stored: Any, payload: Any) -> dict[str, str]:
    """The payload's strings that are the blobs ``stored`` refers to (an escaped string's
    blob holds its escaped text), by sha256 hex."""
    wanted = references(stored)
    found: dict[str, str] = {}
    if not wanted:
        return found
    for text in _strings(payload):
        if len(text) < SHORTEST_BLOB_CHARS:
            continue
        for candidate in (text, escape_text(text)) if needs_escape(text) else (text,):
            key = hashlib.sha256(candidate.encode("utf-8", "surrogatepass")).hexdigest()
            if key in wanted:
                found[key] = candidate
    return found


def _exact(value: Any) -> str:
    """Text that tells apart what ``==`` would not (``1`` and ``true``, ``1`` and ``1.5``)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def read_lines(lines: Iterable[str]) -> Iterator[tuple[int, Line]]:
    """(line number, parsed line) for each line; raises ``FileProblem`` at one that is not
    a line of the format."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            raise FileProblem(number, "an empty line")
        try:
            yield number, parse_line(text)
        except LineError as exc:
            raise FileProblem(number, str(exc)) from None


def checked_events(path: Path, *, validate_events: bool = False) -> Iterator[CheckedEvent | Line]:
    """Every line of the file, events as ``CheckedEvent``; raises ``FileProblem`` at the
    first bad line (after yielding the good ones before it)."""
    checker = FileChecker(validate_events=validate_events)
    with path.open(encoding="utf-8", newline="\n") as file:
        for number, line in read_lines(file):
            checked = checker.feed(number, line)
            yield line if checked is None else checked
    checker.finish()


def check_file(path: Path, *, validate_events: bool = False) -> FileReport:
    """Verify the file at ``path`` (see the module); the report names the first bad line."""
    checker = FileChecker(validate_events=validate_events)
    try:
        with path.open(encoding="utf-8", newline="\n") as file:
            for number, line in read_lines(file):
                checker.feed(number, line)
        return checker.finish()
    except FileProblem as problem:
        return FileReport(
            ok=False, sessions=checker.sessions, line=problem.line, reason=problem.reason
        )
    except UnicodeDecodeError as exc:
        return FileReport(
            ok=False, sessions=checker.sessions, reason=f"the file is not UTF-8 text ({exc})"
        )
