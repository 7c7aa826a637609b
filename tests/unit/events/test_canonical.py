"""Canonical JSON: one text per value, stable through a jsonb round trip."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from app.events.canonical import (
    CanonicalJsonError,
    canonical_json,
    chain_hash,
    format_timestamp,
    hashed_document,
)


def test_keys_sorted_compact_utf8() -> None:
    assert (
        canonical_json({"b": 1, "a": {"d": [1, 2], "c": "é"}}) == '{"a":{"c":"é","d":[1,2]},"b":1}'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e20, "100000000000000000000"),
        (0.1, "0.1"),
        (1.5e-7, "1.5e-07"),
        (True, "true"),
    ],
)
def test_numbers_are_normalised(value: object, text: str) -> None:
    assert canonical_json(value) == text


def test_reparsing_gives_the_same_text() -> None:
    value = {"x": [1.0, 2.5, 1e300, 3, 's\n\t"\\', None, {"y": 1e-300}]}
    text = canonical_json(value)
    assert canonical_json(json.loads(text)) == text


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, object(), b"bytes"])
def test_what_is_not_json_is_refused(bad: object) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json(bad)


@pytest.mark.parametrize("text", ["nul\x00", "\ud800"])
def test_text_postgresql_cannot_hold_is_escaped_not_refused(text: str) -> None:
    """Before the stored form these raised CanonicalJsonError and the event was lost."""
    stored = canonical_json({"a": text})
    assert "\x00" not in stored and "\\u0000" not in stored
    stored.encode("utf-8")


def test_timestamps_are_utc_with_microseconds() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(moment) == "2026-01-02T01:04:05.000006Z"


def test_chain_hash_depends_on_previous_and_document() -> None:
    doc = hashed_document(
        session_id="s", seq=1, event_id="e", kind="message", source="user", cause=None,
        payload={"content": "hi"}, schema_version=1, created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    assert doc.startswith('{"cause":null,"created_at":"2026-01-01T00:00:00.000000Z"')
    assert chain_hash(b"", doc) != chain_hash(b"x", doc)
    assert len(chain_hash(b"", doc)) == 32
