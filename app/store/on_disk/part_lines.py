"""Redactions the database made, made in an export file's lines too, so that the file holds
no more of an event than the log does and ``chronicle verify --file`` still proves it.

Each part the database redacted (``RedactedPart``: session, seq, path, digest) becomes, in
the event's line, exactly the marker the database holds: ``app.events.commitment.redact``
of the line's stored payload at that path, salted with the event's id, gives the same digest
(checked against the record's), so the event's hash and every hash after it still match; the
line's ``payload`` is written as a reader gets it (a placeholder in the part's place). A
prompt message (or tool list) no event of the file names any more, once its names are
redacted, is dropped, as the database forgets it.

Two passes: the first finds the lines that change and the messages still named (a message
line comes before the calls that name it); the second writes. What cannot be done as the
database did is left and named: an event recorded before migration 0029 (the database
redacts it whole, with a record the file does not hold), or a line whose part is not the one
the database removed (another digest: not this database's event).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from app.events.chain import chain_of
from app.events.commitment import RedactionPathError, markers_in, parse_pointer
from app.events.commitment import redact as with_marker
from app.events.stored_form import REDACTED, restore
from app.store.archive.checker import _blob_texts, check_file
from app.store.archive.lines import EventLine, LineError, dump_line, parse_line
from app.store.on_disk.redacted_parts import RedactedPart
from app.store.on_disk.replacing import NotRewritten

EventKey = tuple[UUID, int]


def by_event(parts: Iterable[RedactedPart]) -> dict[EventKey, list[RedactedPart]]:
    """The parts grouped by their event, in the order they were redacted."""
    grouped: dict[EventKey, list[RedactedPart]] = {}
    for part in parts:
        grouped.setdefault((part.session_id, part.seq), []).append(part)
    return grouped


def names_of(kind: Any, stored: Any) -> set[str]:
    """The prompt messages and tool list an ``llm.call``'s stored payload names."""
    if kind != "llm.call" or not isinstance(stored, dict):
        return set()
    prompt = stored.get("prompt")
    named = {h for h in prompt if isinstance(h, str)} if isinstance(prompt, list) else set()
    if isinstance(stored.get("tools"), str):
        named.add(stored["tools"])
    return named


@dataclass
class PartsInFile:
    """What redacting the parts does to one export file (the first pass)."""

    #: The parts made markers here, described (``seq N /path of session X``).
    done: list[str] = field(default_factory=list)
    #: What stays of them, and why.
    left: list[str] = field(default_factory=list)
    #: The event lines that change (line number, 1-based, to its new text).
    replaced: dict[int, bytes] = field(default_factory=dict)
    #: The prompt messages some event of the file still names once they change.
    named: set[str] = field(default_factory=set)
    #: The prompt messages dropped, by key.
    dropped: list[str] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return bool(self.replaced or self.dropped)


def plan_parts(source: Path, parts: Mapping[EventKey, Sequence[RedactedPart]]) -> PartsInFile:
    """The first pass over ``source`` (see the module); ``NotRewritten`` for a line that is
    not a Chronicle export's."""
    plan = PartsInFile()
    previous = b""
    messages: list[str] = []
    with source.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            data = _json(number, raw)
            kind = data.get("type")
            if kind == "session":
                previous = b""
            elif kind == "message":
                messages.append(str(data.get("hash")))
            elif kind == "event":
                session, seq = _uuid(data.get("session_id")), data.get("seq")
                todo = parts.get((session, seq)) if session and isinstance(seq, int) else None
                stored = data.get("stored_payload", data.get("payload"))
                if todo:
                    out = _redacted_line(number, raw.rstrip(b"\n"), todo, previous, plan)
                    if out is not None:
                        plan.replaced[number], stored = out
                plan.named |= names_of(data.get("kind"), stored)
                previous = bytes.fromhex(str(data.get("hash")))
    plan.dropped = [key for key in messages if key not in plan.named]
    return plan


def write_parts(source: Path, draft: Path, plan: PartsInFile) -> None:
    """The second pass: ``source`` to ``draft`` as ``plan`` says, and the draft proved as
    ``verify --file`` proves it (``NotRewritten`` otherwise)."""
    dropped = set(plan.dropped)
    with source.open("rb") as lines, draft.open("wb") as out:
        for number, raw in enumerate(lines, start=1):
            if number in plan.replaced:
                out.write(plan.replaced[number] + b"\n")
                continue
            if dropped and raw.startswith(b'{"hash":'):
                data = json.loads(raw)
                if data.get("type") == "message" and data.get("hash") in dropped:
                    continue
            out.write(raw)
    proved(draft, "the file rewritten would not verify")


def proved(path: Path, failed: str) -> None:
    """``NotRewritten`` (``failed``, and why) unless ``path`` verifies as an export file."""
    report = check_file(path)
    if not report.ok:
        where = f"line {report.line}: " if report.line else ""
        raise NotRewritten(f"{failed} ({where}{report.reason})")


def _json(number: int, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        raise NotRewritten(f"line {number} is not JSON: not a Chronicle export") from None
    if not isinstance(data, dict):
        raise NotRewritten(f"line {number} is not a line of a Chronicle export")
    return data


def _uuid(text: Any) -> UUID | None:
    try:
        return UUID(str(text))
    except ValueError:
        return None


def _covered(stored: Any, path: str) -> bool:
    """Is the part at ``path`` redacted already (it, or a part holding it, is a marker)?"""
    tokens = parse_pointer(path)
    for pointer, _ in markers_in(stored):
        marked = parse_pointer(pointer)
        if tokens[: len(marked)] == marked:
            return True
    return False


def _redacted_line(
    number: int,
    raw: bytes,
    parts: Sequence[RedactedPart],
    previous: bytes,
    plan: PartsInFile,
) -> tuple[bytes, Any] | None:
    """The event line with ``parts`` made markers, and its new stored payload; None when
    nothing of it changes (redacted already, or left: said in ``plan.left``)."""
    try:
        line = parse_line(raw.decode("utf-8"))
    except (LineError, UnicodeDecodeError) as exc:
        raise NotRewritten(f"line {number}: {exc}") from None
    assert isinstance(line, EventLine)
    stored = line.stored
    todo = [part for part in parts if not _covered(stored, part.path)]
    if not todo:
        return None
    fields = {
        "session_id": str(line.session_id),
        "seq": line.seq,
        "event_id": str(line.event_id),
        "kind": line.kind,
        "source": line.source,
        "cause": line.cause,
        "schema_version": line.schema_version,
    }
    try:
        fields["created_at"] = line.created()
    except LineError as exc:
        raise NotRewritten(f"line {number}: {exc}") from None
    expected = bytes.fromhex(line.hash)
    chain = chain_of(previous, expected, **fields, payload=stored)
    if chain != 2:
        why = (
            "it was recorded before migration 0029: the database took its whole payload, with "
            "a record this file does not hold, and the file's chain breaks without it"
            if chain == 1
            else "it does not match its hash"
        )
        plan.left += [f"line {number}: {part.describe()} stays: {why}" for part in todo]
        return None
    redacted = stored
    for part in todo:
        try:
            candidate, marker = with_marker(redacted, part.path, line.event_id.bytes)
        except RedactionPathError as exc:
            plan.left.append(f"line {number}: {part.describe()} stays: {exc}")
            continue
        if marker[REDACTED] != part.removed:
            plan.left.append(
                f"line {number}: {part.describe()} stays: the line holds another part there "
                "than the database removed (not this database's event)"
            )
            continue
        redacted = candidate
        plan.done.append(part.describe())
    if redacted is stored:
        return None
    if chain_of(previous, expected, **fields, payload=redacted) != 2:  # never, but checked
        raise NotRewritten(f"line {number}: its redaction would change its hash")
    payload = dict(restore(redacted, _blob_texts(stored, line.payload)))
    rewritten = line.model_copy(update={"payload": payload, "stored_payload": redacted})
    return dump_line(rewritten).encode("utf-8"), redacted


def rewrite_parts(source: Path, draft: Path, parts: Iterable[RedactedPart]) -> PartsInFile:
    """``source`` to ``draft`` with ``parts`` redacted (both passes); ``NotRewritten`` when
    the source does not verify, or the draft would not."""
    proved(source, "it does not verify as a Chronicle export")
    plan = plan_parts(source, by_event(parts))
    write_parts(source, draft, plan)
    return plan
