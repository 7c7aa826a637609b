"""The ``annotation`` kind: a person's label on a session or one of its events, bounded, and
handled by nobody."""

from __future__ import annotations

import pytest

from app.events import (
    ACTION_KINDS,
    AWAITED_KINDS,
    OBSERVATION_KINDS,
    InvalidEventError,
    parse_event,
)
from app.events.annotation import MAX_COMMENT, MAX_LABEL, MAX_TAG, MAX_TAGS, Annotation


def test_it_records_who_what_and_about_which_event() -> None:
    tags = ["Shell", "shell", " prod "]
    note = Annotation(
        label=" unsafe   command ", comment="rm -rf", tags=tags, target_seq=12, user="ada"
    )
    assert note.source == "user" and note.cause is None
    assert note.payload() == {
        "label": "unsafe command",
        "comment": "rm -rf",
        "tags": ["Shell", "prod"],  # the same tag, whatever its case, once
        "target_seq": 12,
        "user": "ada",
    }


def test_the_whole_session_is_a_target_of_none_and_round_trips() -> None:
    note = parse_event({"kind": "annotation", "label": "reviewed", "user": "ada"})
    assert isinstance(note, Annotation) and note.target_seq is None and note.tags == []
    again = parse_event({"kind": "annotation", **note.payload()})
    assert (
        again.payload()
        == note.payload()
        == {"label": "reviewed", "comment": "", "tags": [], "target_seq": None, "user": "ada"}
    )


def test_no_service_answers_it_and_it_is_neither_action_nor_observation() -> None:
    assert "annotation" not in ACTION_KINDS | OBSERVATION_KINDS | AWAITED_KINDS
    assert Annotation.handled_by is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"label": ""}, "label"),
        ({"label": "   "}, "label"),
        ({"label": "x" * (MAX_LABEL + 1)}, "label"),
        ({"label": "a\u0007b"}, "label"),
        ({"label": "ok", "comment": "c" * (MAX_COMMENT + 1)}, "comment"),
        ({"label": "ok", "tags": ["t" * (MAX_TAG + 1)]}, "tags"),
        ({"label": "ok", "tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}, "tags"),
        ({"label": "ok", "tags": [""]}, "tags"),
        ({"label": "ok", "target_seq": 0}, "target_seq"),
        ({"label": "ok", "target_seq": 2**31}, "target_seq"),
        ({"label": "ok", "surprise": 1}, "surprise"),
    ],
)
def test_it_is_validated_and_bounded(fields: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidEventError) as refused:
        parse_event({"kind": "annotation", **fields})
    assert refused.value.field is not None and refused.value.field.startswith(field)


def test_a_comment_may_hold_what_the_log_keeps() -> None:
    note = Annotation(label="odd file name", comment="caf\udce9.txt")
    assert note.comment == "caf\udce9.txt"
