"""The record of a redaction: what part of which event of the session was removed, by whom,
when and why, and what it was by hash (docs/erasure.md).

A ``redaction`` is appended in the same transaction that replaces the part with its marker
(``chronicle_redact``), so one is never without the other: ``verify`` reports a marker no
record covers, or a record whose marker is missing, as tampering. Who is the envelope's
``user`` (an admin through the API, the operator's name on the command line), when is the
event's ``created_at``. Like an annotation it is a remark: the agent never reads it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from app.events.base import MAX_SEQ, Event, Source

MAX_REASON = 2000
MAX_PATH = 1000


class Redaction(Event):
    """``user`` removed the part at ``path`` (a JSON Pointer; "" the whole payload) of the
    session's event ``target_seq``; ``removed`` is its digest in that payload's tree
    commitment, ``was`` its JSON type."""

    remark: ClassVar[bool] = True

    kind: Literal["redaction"] = "redaction"
    source: Source = "user"
    target_seq: int = Field(ge=1, le=MAX_SEQ)
    path: str = Field(default="", max_length=MAX_PATH)
    removed: str = Field(pattern="^[0-9a-f]{64}$")
    was: Literal["string", "number", "boolean", "null", "array", "object"]
    reason: str = Field(min_length=1, max_length=MAX_REASON)


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (Redaction,)
