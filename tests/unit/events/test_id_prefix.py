"""Session-id prefixes as uuid ranges (app/events/id_prefix.py)."""

from __future__ import annotations

import uuid

import pytest

from app.events.id_prefix import NotAnIdPrefix, ambiguity, id_prefix, prefix_range


def test_a_prefix_is_the_range_of_ids_beginning_with_it() -> None:
    low, high = prefix_range("019A2B3C")
    assert low == uuid.UUID("019a2b3c-0000-0000-0000-000000000000")
    assert high == uuid.UUID("019a2b3c-ffff-ffff-ffff-ffffffffffff")
    inside = uuid.UUID("019a2b3c-1234-7abc-8def-0123456789ab")
    assert low <= inside <= high
    assert not low <= uuid.UUID("019a2b3d-0000-0000-0000-000000000000") <= high


def test_dashes_and_a_whole_id_are_prefixes_too() -> None:
    whole = "019a2b3c-1234-7abc-8def-0123456789ab"
    assert prefix_range(whole) == (uuid.UUID(whole), uuid.UUID(whole))
    assert id_prefix("019a2b3c-12") == "019a2b3c12"


@pytest.mark.parametrize("text", ["", "abc", "xyz12345", "019a' OR 1=1", "0" * 33, "01 9a"])
def test_anything_else_is_refused_with_the_rule(text: str) -> None:
    with pytest.raises(NotAnIdPrefix, match="at least 4 hex digits"):
        id_prefix(text)


def test_the_ambiguity_says_what_to_do() -> None:
    assert ambiguity("abcd", []) == "no session id begins with abcd"
    ids = [uuid.UUID(int=n) for n in range(1, 5)]
    assert ambiguity("0000", ids[:2]) == (
        f"0000 begins more than one session id ({ids[0]}, {ids[1]}): give more of it"
    )
    assert ambiguity("0000", ids).endswith(f"{ids[2]}, ...): give more of it")
