"""Erased sessions taken out of an export file's lines, so that what is left still proves
itself (``chronicle verify --file``).

Each erased session's block goes: its ``session`` line and its events. A prompt message line
stays only while an event of a session left names it: a message is written once, before the
first call that names it, so a block that goes may hold a message a later session's call
needs (it stays where it is, before that call). Nothing else changes: every other session's
chain is untouched. An archive's ``anchors.jsonl`` loses the erased sessions' anchors the
same way.

Two passes: the first finds the sessions the file holds and the messages still named; the
second writes.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from app.store.on_disk.part_lines import names_of, proved
from app.store.on_disk.replacing import NotRewritten


@dataclass
class SessionsInFile:
    """What taking ``erased`` out of one export file does (the first pass)."""

    #: The erased sessions the file holds, in its order.
    found: list[UUID] = field(default_factory=list)
    #: The sessions that stay.
    kept: list[UUID] = field(default_factory=list)
    #: The prompt messages the sessions that stay name.
    named: set[str] = field(default_factory=set)


def plan_without(source: Path, erased: Collection[UUID]) -> SessionsInFile:
    """The first pass over ``source``; ``NotRewritten`` for a line that is not an export's."""
    plan = SessionsInFile()
    with source.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            data = _json(number, raw)
            kind = data.get("type")
            if kind == "session":
                session = _uuid(number, data.get("session_id"))
                (plan.found if session in erased else plan.kept).append(session)
            elif kind == "event" and _uuid(number, data.get("session_id")) not in erased:
                stored = data.get("stored_payload", data.get("payload"))
                plan.named |= names_of(data.get("kind"), stored)
    return plan


def write_without(
    source: Path, draft: Path, erased: Collection[UUID], plan: SessionsInFile
) -> None:
    """The second pass: ``source`` to ``draft`` without the erased sessions' lines, proved as
    ``verify --file`` proves it (``NotRewritten`` otherwise)."""
    with source.open("rb") as lines, draft.open("wb") as out:
        for number, raw in enumerate(lines, start=1):
            data = json.loads(raw)
            kind = data.get("type")
            if kind in ("session", "event") and _uuid(number, data["session_id"]) in erased:
                continue
            if kind == "message" and data.get("hash") not in plan.named:
                continue
            out.write(raw)
    proved(draft, "the file without them would not verify")


def anchors_without(source: Path, draft: Path, erased: Collection[UUID]) -> None:
    """An anchors file (JSONL) without the lines of the erased sessions."""
    with source.open("rb") as lines, draft.open("wb") as out:
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                data = _json(number, raw)
                if _uuid(number, data.get("session_id")) in erased:
                    continue
            out.write(raw)


def _json(number: int, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        raise NotRewritten(f"line {number} is not JSON") from None
    if not isinstance(data, dict):
        raise NotRewritten(f"line {number} is not a JSON object")
    return data


def _uuid(number: int, text: object) -> UUID:
    try:
        return UUID(str(text))
    except ValueError:
        raise NotRewritten(f"line {number} names no session ({text!r})") from None
