"""A value redacted from the lines of an export file (app/store/archive/lines.py) so that
``chronicle verify --file`` still proves it.

An event line of chain 2 (every event appended since migration 0029) takes the same marker
the database puts in its payload: each string of its stored form that holds the value (an
escaped one, a blob's text in the payload) is replaced by ``{"$redacted": digest, "was":
"string"}``, the digest salted with the event's id (``app.events.commitment``), so the
event's hash, and every hash after it, still match; ``payload`` is written as a reader gets
it (``[redacted]`` in the part's place). A prompt message (or tool list) whose text holds the
value is dropped, and every ``llm.call`` that names it has that name redacted the same way,
as the database forgets a message.

What cannot go without breaking the chain stays, and is named (``left``): an event of chain 1
(hashed over its payload's text, as the database refuses too), an object's key, a line that
holds no content (a session line). The value in the file's other lines is found however it
was written (``app.store.on_disk.forms``).

The file keeps no record of who redacted it: each marker's ``redaction`` event is in the
database's log, past the head the file ends at.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.events.chain import chain_of
from app.events.commitment import pointers_to
from app.events.commitment import redact as with_marker
from app.events.stored_form import BLOB, CHARS, ESC, restore, unescape_text
from app.store.archive.checker import _blob_texts, check_file
from app.store.archive.lines import EventLine, LineError, dump_line, parse_line
from app.store.on_disk.forms import byte_pattern, string_holds
from app.store.on_disk.replacing import NotRewritten


@dataclass
class ExportLines:
    """Feed it an export file's lines in order (``line``); it gives each line back with the
    value redacted (or None for a line to drop) and keeps where the value was."""

    value: str
    #: Line numbers (1-based) that held the value.
    found: list[int] = field(default_factory=list)
    #: Where the value stays, and why (``line N: ...``).
    left: list[str] = field(default_factory=list)
    #: Prompt messages dropped, by key.
    dropped: set[str] = field(default_factory=set)
    _previous: bytes = b""

    def __post_init__(self) -> None:
        self._pattern = byte_pattern(self.value)
        self._holds = string_holds(self.value)

    def line(self, number: int, raw: bytes) -> bytes | None:
        """The line (without its newline) as it is to be written; None: dropped."""
        hit = self._pattern.search(raw) is not None
        if hit:
            self.found.append(number)
        try:
            data = json.loads(raw)
        except ValueError:
            raise NotRewritten(f"line {number} is not JSON: not a Chronicle export") from None
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "session":
            self._previous = b""
        elif kind == "message" and hit:
            self.dropped.add(str(data.get("hash")))
            return None
        elif kind == "event":
            named = data.get("kind") == "llm.call" and any(
                key.encode() in raw for key in self.dropped
            )
            out = self._event(number, raw) if hit or named else raw
            self._previous = bytes.fromhex(str(data.get("hash")))
            return out
        if hit:
            self.left.append(f"line {number}: the value is in a {kind} line, which no marker takes")
        return raw

    def _event(self, number: int, raw: bytes) -> bytes:
        try:
            line = parse_line(raw.decode("utf-8"))
        except (LineError, UnicodeDecodeError) as exc:
            raise NotRewritten(f"line {number}: {exc}") from None
        assert isinstance(line, EventLine)
        where = f"line {number}: event {line.seq} of session {line.session_id}"
        stored = line.stored
        blobs = _blob_texts(stored, line.payload)
        found = pointers_to(stored, self._matcher(blobs, line.kind == "llm.call"))
        if not found:
            self.left.append(f"{where} holds it outside any string a marker can take (a key)")
            return raw
        try:
            fields = _hashed_fields(line)
        except LineError as exc:
            raise NotRewritten(f"line {number}: {exc}") from None
        expected = bytes.fromhex(line.hash)
        chain = chain_of(self._previous, expected, **fields, payload=stored)
        if chain != 2:
            self.left.append(
                f"{where} was recorded before redaction was possible (its hash covers its "
                "payload's text, as the database's does): it cannot go without breaking the chain"
                if chain == 1
                else f"{where} does not match its hash"
            )
            return raw
        redacted = stored
        for pointer in found:
            redacted, _ = with_marker(redacted, pointer, line.event_id.bytes)
        if chain_of(self._previous, expected, **fields, payload=redacted) != 2:  # never, but
            raise NotRewritten(f"{where}: its redaction would change its hash")  # checked
        payload = dict(restore(redacted, blobs))
        rewritten = line.model_copy(update={"payload": payload, "stored_payload": redacted})
        out = dump_line(rewritten).encode("utf-8")
        if self._pattern.search(out):
            self.left.append(f"{where} still holds it outside any string (an object's key)")
        return out

    def _matcher(self, blobs: dict[str, str], llm_call: bool) -> Callable[[Any], bool]:
        """Whether a stored node is a string holding the value (plain, escaped, or a blob's
        text), or, in an ``llm.call``, the name of a dropped prompt message."""

        def text_of(node: Any) -> str | None:
            if isinstance(node, str):
                return node
            if isinstance(node, dict) and set(node) == {ESC}:
                inner = text_of(node[ESC])
                return unescape_text(inner) if inner is not None else None
            if isinstance(node, dict) and set(node) == {BLOB, CHARS}:
                return blobs.get(str(node[BLOB]))
            return None

        def matches(node: Any) -> bool:
            if llm_call and isinstance(node, str) and node in self.dropped:
                return True
            text = text_of(node)
            return text is not None and self._holds(text)

        return matches


def _hashed_fields(line: EventLine) -> dict[str, Any]:
    """What the event's hash covers, but its payload (``chain_of``'s fields)."""
    return {
        "session_id": str(line.session_id),
        "seq": line.seq,
        "event_id": str(line.event_id),
        "kind": line.kind,
        "source": line.source,
        "cause": line.cause,
        "schema_version": line.schema_version,
        "created_at": line.created(),
    }


def redacted_lines(value: str, lines: Iterable[bytes]) -> tuple[ExportLines, Iterator[bytes]]:
    """The lines (each with its newline) with ``value`` redacted, lazily, and what is known
    of it once they are all read."""
    state = ExportLines(value)

    def each() -> Iterator[bytes]:
        for number, raw in enumerate(lines, start=1):
            out = state.line(number, raw.rstrip(b"\n"))
            if out is not None:
                yield out + b"\n"

    return state, each()


def redact_export(source: Path, draft: Path, value: str) -> ExportLines:
    """Write ``source`` to ``draft`` with ``value`` redacted, and prove the draft as
    ``verify --file`` does; ``NotRewritten`` when the source is not an export that verifies,
    or the draft would not."""
    before = check_file(source)
    if not before.ok:
        where = f"line {before.line}: " if before.line else ""
        raise NotRewritten(f"it does not verify as a Chronicle export ({where}{before.reason})")
    with source.open("rb") as lines, draft.open("wb") as out:
        state, rewritten = redacted_lines(value, lines)
        for line in rewritten:
            out.write(line)
    after = check_file(draft)
    if not after.ok:
        where = f"line {after.line}: " if after.line else ""
        raise NotRewritten(f"the file redacted would not verify ({where}{after.reason})")
    return state
