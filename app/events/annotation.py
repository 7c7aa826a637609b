"""A person's remark on a session or on one of its events: an auditor's or a reviewer's label.

An ``annotation`` is recorded in the session's own log (its hash chain covers it), with who
wrote it in the envelope's ``user`` (as a ``message`` records its sender) and when in the
event's ``created_at``. It names what it is about with ``target_seq`` (an event of the
session, or None: the whole session), never with ``cause``: a cause means "this answers that"
to the controller, the replay and the unique index over observations.

Nothing handles it: no service answers it, the agent's controller does not take it in
(``app.agent.controller``: it wakes nobody and never becomes part of what the agent reads),
and a replay neither serves nor compares it, so annotating a session changes neither what its
agent does nor what its replay finds. A label is free text; ``SUGGESTED_LABELS`` are the ones
the page offers, and ``REVIEWED`` on the whole session is what the review queue reads as
"reviewed" (docs/web.md).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from app.events.base import MAX_SEQ, Event, Source

#: The labels the page suggests (any other text is a label too).
SUGGESTED_LABELS: tuple[str, ...] = (
    "unsafe command",
    "wrong answer",
    "good",
    "bad",
    "needs attention",
    "reviewed",
)
#: The label that, on the whole session, marks it reviewed (the review queue's test).
REVIEWED = "reviewed"

MAX_LABEL = 100
MAX_COMMENT = 4000
MAX_TAG = 50
MAX_TAGS = 20


def _one_line(value: str) -> str:
    """Trimmed, inner runs of white space made one space; no control characters."""
    text = " ".join(value.split())
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError("should not contain control characters")
    if not text:
        raise ValueError("should not be blank")
    return text


def _tags(values: list[str]) -> list[str]:
    """Each tag on one line, the same tag (ignoring case) kept once, in the order given."""
    seen: set[str] = set()
    kept: list[str] = []
    for value in values:
        tag = _one_line(value)
        if len(tag) > MAX_TAG:
            raise ValueError(f"a tag should have at most {MAX_TAG} characters")
        if tag.casefold() not in seen:
            seen.add(tag.casefold())
            kept.append(tag)
    return kept


def _at_most(limit: int) -> AfterValidator:
    """At most ``limit`` characters, counted here: pydantic's own ``max_length`` refuses a
    string holding a lone surrogate, which the log keeps (app/server/text_fields.py)."""

    def checked(value: str) -> str:
        if len(value) > limit:
            raise ValueError(f"should have at most {limit} characters")
        return value

    return AfterValidator(checked)


Label = Annotated[str, AfterValidator(_one_line), _at_most(MAX_LABEL)]


class Annotation(Event):
    """``user`` labelled the session (``target_seq`` None) or its event ``target_seq``."""

    remark: ClassVar[bool] = True

    kind: Literal["annotation"] = "annotation"
    source: Source = "user"
    label: Label
    comment: Annotated[str, _at_most(MAX_COMMENT)] = ""
    tags: Annotated[list[str], Field(max_length=MAX_TAGS), AfterValidator(_tags)] = Field(
        default_factory=list
    )
    target_seq: int | None = Field(default=None, ge=1, le=MAX_SEQ)


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (Annotation,)
