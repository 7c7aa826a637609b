"""The payload's tree commitment (app/events/commitment.py): removing any part keeps it, changing
any part changes it, and the marker of a removed part holds its digest, never its content."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.events.canonical import encode
from app.events.commitment import (
    RedactionPathError,
    commitment,
    digest,
    is_redacted,
    markers_in,
    parse_pointer,
    redact,
)
from app.events.stored_form import REDACTED

SALT = uuid.UUID("0190a5e0-0000-7000-8000-000000000001").bytes

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)
payloads = st.dictionaries(st.text(max_size=8), values, min_size=1, max_size=5)


def _pointers(node: Any, prefix: str = "") -> list[str]:
    """Every JSON Pointer into a plain (marker-free) value."""
    found = []
    if isinstance(node, dict):
        for key, child in node.items():
            here = f"{prefix}/{key.replace('~', '~0').replace('/', '~1')}"
            found += [here, *_pointers(child, here)]
    elif isinstance(node, list):
        for index, child in enumerate(node):
            here = f"{prefix}/{index}"
            found += [here, *_pointers(child, here)]
    return found


def _plain(payload: dict[str, Any]) -> bool:
    """Its own stored form: no key written as ``$obj`` pairs, no escaped string (those are
    tested apart)."""
    return not encode(payload).marked


@settings(max_examples=150, deadline=None)
@given(payloads)
def test_removing_any_part_keeps_the_commitment(payload: dict[str, Any]) -> None:
    stored = encode(payload).stored
    before = commitment(stored, SALT)
    for pointer in ["", *(_pointers(payload) if _plain(payload) else [])]:
        redacted, gone = redact(stored, pointer, SALT)
        assert commitment(redacted, SALT) == before, pointer
        assert gone[REDACTED] in json.dumps(redacted)


@settings(max_examples=150, deadline=None)
@given(payloads, st.data())
def test_changing_any_part_changes_the_commitment(payload: dict[str, Any], data: Any) -> None:
    stored = encode(payload).stored
    pointers = _pointers(payload) if _plain(payload) else []
    if not pointers:
        return
    pointer = data.draw(st.sampled_from(pointers))
    changed = json.loads(json.dumps(stored))
    *path, last = parse_pointer(pointer)
    node = changed
    for token in path:
        node = node[int(token)] if isinstance(node, list) else node[token]
    key = int(last) if isinstance(node, list) else last
    node[key] = {"a different": node[key]}
    assert commitment(changed, SALT) != commitment(stored, SALT)


def test_order_and_place_matter_but_not_how_keys_are_written() -> None:
    payload = {"b": [1, 2], "a": {"x": "1"}}
    assert commitment(payload, SALT) == commitment({"a": {"x": "1"}, "b": [1, 2]}, SALT)
    assert commitment({"b": [2, 1], "a": {"x": "1"}}, SALT) != commitment(payload, SALT)
    assert commitment({"b": [1, 2], "a": {"x": 1}}, SALT) != commitment(payload, SALT)
    assert commitment({"b": [1, 2], "a": {"y": "1"}}, SALT) != commitment(payload, SALT)
    other_salt = uuid.uuid4().bytes
    assert commitment(payload, other_salt) != commitment(payload, SALT)


def test_the_marker_holds_the_digest_and_the_type_not_the_content() -> None:
    payload = {"response": {"content": "the key is sk-live-123", "tool_calls": [{"id": "c1"}]}}
    redacted, gone = redact(payload, "/response/content", SALT)
    removed = gone[REDACTED]
    marker = redacted["response"]["content"]
    assert marker == gone == {REDACTED: removed, "was": "string"} and is_redacted(marker)
    assert "sk-live" not in json.dumps(redacted)
    assert removed == digest("the key is sk-live-123", SALT).hex()
    assert redacted["response"]["tool_calls"] == [{"id": "c1"}]
    again, _ = redact(redacted, "/response/tool_calls/0", SALT)
    assert again["response"]["tool_calls"][0]["was"] == "object"
    assert commitment(again, SALT) == commitment(payload, SALT)
    whole, gone_whole = redact(again, "", SALT)
    assert whole == gone_whole == {REDACTED: gone_whole[REDACTED], "was": "object"}
    assert commitment(whole, SALT) == commitment(payload, SALT)


def test_paths_through_escaped_keys_blobs_and_escapes() -> None:
    payload = {"args": {"$blob": "a key the stored form escapes", "a/b": 1, "t~": 2}, "n": "\x00"}
    stored = encode(payload).stored
    assert stored != payload  # written with $obj pairs and an $esc string
    for pointer in ("/args/$blob", "/args/a~1b", "/args/t~0", "/n", "/args"):
        redacted, _ = redact(stored, pointer, SALT)
        assert commitment(redacted, SALT) == commitment(stored, SALT), pointer
    redacted, _ = redact(stored, "/n", SALT)
    assert redacted["n"]["was"] == "string"
    long = encode({"output": "x" * 100}, blob_threshold=10).stored
    redacted, _ = redact(long, "/output", SALT)
    assert redacted["output"]["was"] == "string" and "$blob" not in json.dumps(redacted)


@pytest.mark.parametrize(
    ("pointer", "says"),
    [
        ("response", "is not a JSON Pointer"),
        ("/missing", "nothing at /missing"),
        ("/list/3", "nothing at /list/3"),
        ("/list/01", "no leading zeros"),
        ("/list/0/deeper", "nothing at /list/0/deeper"),
        ("/gone", "/gone is already redacted"),
        ("/gone/inside", "/gone is already redacted"),
    ],
)
def test_a_path_that_names_nothing_says_where_it_stops(pointer: str, says: str) -> None:
    payload, _ = redact({"list": ["a", "b"], "gone": "secret"}, "/gone", SALT)
    with pytest.raises(RedactionPathError, match=says):
        redact(payload, pointer, SALT)


def test_markers_are_found_where_the_model_reads_them() -> None:
    stored = encode({"args": {"$blob": "x", "a/b": ["s", "t"]}, "out": "o"}).stored
    once, _ = redact(stored, "/args/a~1b/1", SALT)
    twice, gone = redact(once, "/out", SALT)
    found = markers_in(twice)
    assert [pointer for pointer, _ in found] == ["/args/a~1b/1", "/out"]
    assert found[1][1] == gone[REDACTED]
    assert markers_in(stored) == []
