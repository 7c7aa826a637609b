"""Canonical JSON through orjson: byte for byte the standard library's text, or not used.

Every stored event's hash is computed over its canonical text, so the encoder may change only
if no value's text changes. The reference below is the encoder canonical JSON was written with
(``json.JSONEncoder``, sorted keys, compact, UTF-8, no NaN); generated values are compared
with it byte for byte, through every entry point that produces hashed text.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.events.canonical import (
    _json_text,
    _normalise,
    _NotItsOwnStoredForm,
    canonical_json,
    encode,
    hashed_document,
    stored_json,
)

REFERENCE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)

#: Characters the two encoders could plausibly disagree on.
NASTY_CHARACTERS = [
    "\x00",
    "\x01",
    "\x08",
    "\t",
    "\n",
    "\x0b",
    "\x0c",
    "\r",
    "\x1f",
    '"',
    "\\",
    "/",
    "\x7f",
    "\x80",
    "\u00e9",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\uffff",
    "\U0001f600",
    "\U0010ffff",
    "\ud800",  # lone surrogates: orjson refuses them, the stored form escapes them
    "\udfff",
    "$",
]
NASTY_FLOATS = [
    1e16,
    1e-7,
    1.5e-7,
    -0.0,
    0.1,
    5e-324,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    2.5,
    1e22,
    123456789012345.6,
    3.0,
    -7.0,
    2.0**53,
    2.0**64,
]
NASTY_INTS = [0, -1, 2**53, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**64), 10**40]

text = st.text(
    alphabet=st.one_of(st.sampled_from(NASTY_CHARACTERS), st.characters(codec=None)),
    max_size=30,
)
keys = st.one_of(text, st.sampled_from(["a", "b", "$esc", "$blob", "$obj", "chars", "é", ""]))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(NASTY_INTS),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(NASTY_FLOATS),
    text,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(keys, inner, max_size=6),
    ),
    max_leaves=40,
)
examples = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@examples
@given(values)
def test_the_text_of_a_value_is_the_reference_text_of_its_stored_form(value: Any) -> None:
    encoded = encode(value)
    assert encoded.text == REFERENCE.encode(encoded.stored)
    assert canonical_json(value) == encoded.text


@examples
@given(values, st.sampled_from([None, 8, 64]))
def test_with_blobs_the_text_is_still_the_reference_text(value: Any, threshold: Any) -> None:
    encoded = encode(value, blob_threshold=threshold)
    assert encoded.text == REFERENCE.encode(encoded.stored)


@examples
@given(values)
def test_json_text_is_the_reference_encoders_text(value: Any) -> None:
    try:
        normalised = _normalise(value, sys.maxsize)
    except _NotItsOwnStoredForm:
        return
    assert _json_text(normalised) == REFERENCE.encode(normalised)


@examples
@given(values)
def test_the_hashed_document_is_the_reference_text(value: Any) -> None:
    """What the chain is computed over (and verification recomputes) is unchanged."""
    stored = encode({"v": value}).stored
    created = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    document = hashed_document(
        session_id="s",
        seq=3,
        event_id="e",
        kind="message",
        source="user",
        cause=None,
        payload=stored,
        schema_version=1,
        created_at=created,
    )
    expected = {
        "cause": None,
        "created_at": "2026-01-02T03:04:05.678901Z",
        "event_id": "e",
        "kind": "message",
        "payload": stored,
        "schema_version": 1,
        "seq": 3,
        "session_id": "s",
        "source": "user",
    }
    assert document == REFERENCE.encode(_normalise(expected, sys.maxsize))
    assert stored_json(stored) == REFERENCE.encode(_normalise(stored, sys.maxsize))


def test_floats_take_the_reference_path() -> None:
    """orjson writes these differently: without the fallback the texts (and hashes) change."""
    for number, reference in [(1e-7, "1e-07"), (1.5e-7, "1.5e-07"), (2.5e-5, "2.5e-05")]:
        assert orjson.dumps([number]).decode() != f"[{reference}]"
        assert canonical_json([number]) == f"[{reference}]"
        assert canonical_json({"x": number}) == f'{{"x":{reference}}}'
        assert canonical_json(number) == reference


def test_what_orjson_refuses_takes_the_reference_path() -> None:
    big = 2**64
    assert canonical_json({"n": big}) == f'{{"n":{big}}}'
    assert canonical_json([-(2**64), 10**40]) == f"[{-(2**64)},{10**40}]"
    deep: Any = "leaf"
    for _ in range(300):  # deeper than orjson writes
        deep = [deep]
    assert canonical_json(deep) == "[" * 300 + '"leaf"' + "]" * 300


def test_text_that_looks_like_a_float_token_gives_the_same_text() -> None:
    value = {"a": "x:1.5", "b": ["[2e5", ",3.0"]}
    assert canonical_json(value) == REFERENCE.encode(value)


def test_the_common_payloads_are_written_by_orjson() -> None:
    """The fast path is taken (the comparisons above are not all on the fallback)."""
    for value in [
        {"content": "message number 1 " + "x" * 80},
        {"command": 'echo "a\\b"\n', "thought": "", "tool_call_id": None, "timeout": 30},
        {"exit_code": 0, "output": "\u2028ok\x7f\U0001f600", "nested": [{"k": [1, True]}]},
    ]:
        expected = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        assert canonical_json(value) == expected == REFERENCE.encode(value)
