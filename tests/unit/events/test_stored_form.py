"""The stored form: escapes and blob references that always restore to the exact value.

Before it, a string holding NUL or a lone surrogate was refused (``CanonicalJsonError``), so a
model call or an observation holding one was lost; a long string made its event too large.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from app.events.canonical import CanonicalJsonError, canonical_json, encode, stored_json
from app.events.stored_form import (
    EncodedObject,
    RestoredObject,
    StoredFormError,
    escape_text,
    holds_markers,
    references,
    restore,
    stored_form,
    tagged,
    unescape_text,
)

SHA = "ab" * 32
LOOKALIKES: list[Any] = [
    {"$esc": "caf\\udce9"},
    {"$blob": SHA, "chars": 3},
    {"$obj": [["a", 1]]},
    {"$esc": {"$blob": SHA, "chars": 3}},
    {"$obj": "not pairs", "other": 1},
    {"$blob": "x"},
    ["$esc", "$blob", {"k": "$obj"}],
]
NASTY = [
    "",
    "plain",
    "nul\x00inside",
    "\x00",
    "caf\udce9.txt",
    "\ud83d\ude00 two surrogates in a row",
    "😀 a real emoji",
    "back\\slash",
    "\\0 looks escaped\x00",
    "\\udce9 looks escaped \udce9",
    'quote " and \\" and \x00',
    "$esc",
    '"$blob":',
]


def round_trip(value: Any, threshold: int | None = None) -> tuple[Any, Any]:
    """(what a reader gets back, the encoding) through JSON text, as the table would."""
    encoded = encode(value, blob_threshold=threshold)
    decoded = json.loads(encoded.text)
    return restore(tagged(decoded, encoded.text), encoded.blobs), encoded


def storable(text: str) -> None:
    """What jsonb and UTF-8 accept: no NUL (not even escaped as \\u0000), no surrogate."""
    assert "\x00" not in text and "\\u0000" not in text
    text.encode("utf-8")


@pytest.mark.parametrize("text", NASTY)
def test_strings_round_trip_as_values_and_as_keys(text: str) -> None:
    value = {"s": text, text: [text, {"nested": text}], "n": 1.0}
    back, encoded = round_trip(value)
    assert back == {"s": text, text: [text, {"nested": text}], "n": 1}
    assert back[text][0] == text and type(back["n"]) is int
    storable(encoded.text)


@pytest.mark.parametrize("lookalike", LOOKALIKES)
def test_genuine_values_that_look_like_markers_round_trip(lookalike: Any) -> None:
    value = {
        "payload": lookalike,
        "list": [lookalike],
        **({} if not isinstance(lookalike, dict) else lookalike),
    }
    back, encoded = round_trip(value)
    assert back == value
    assert encoded.marked == isinstance(lookalike, dict)
    assert not encoded.blobs


def test_escaping_is_exact_and_readable() -> None:
    assert escape_text("caf\udce9\x00\\") == "caf\\udce9\\0\\\\"
    assert unescape_text("caf\\udce9\\0\\\\") == "caf\udce9\x00\\"
    assert canonical_json({"name": "caf\udce9.txt"}) == '{"name":{"$esc":"caf\\\\udce9.txt"}}'
    assert canonical_json({"a\x00": 1}) == '{"$obj":[[{"$esc":"a\\\\0"},1]]}'
    assert canonical_json({"$blob": "x"}) == '{"$obj":[["$blob","x"]]}'


@pytest.mark.parametrize("bad", ["\\x", "\\u0041", "\\uDCE9", "\\", "a\\ud7ff"])
def test_unknown_escapes_are_refused(bad: str) -> None:
    with pytest.raises(StoredFormError):
        unescape_text(bad)


def test_values_without_markers_are_their_own_stored_form() -> None:
    value = {"content": "hello", "n": [1, 2.5, None, True], "$notreserved": "$HOME"}
    encoded = encode(value, blob_threshold=64)
    assert not encoded.marked and encoded.stored is encoded.value and not encoded.blobs
    assert encoded.text == stored_json(value)


def test_long_strings_become_one_blob_each_and_come_back() -> None:
    big = "x" * 100
    other = "y" * 100
    value = {"a": big, "b": [big, {"c": big}], "d": other, "short": "s"}
    back, encoded = round_trip(value, threshold=64)
    assert back == value
    assert set(encoded.blobs) == {_sha(big), _sha(other)}
    assert encoded.text.count(_sha(big)) == 3 and '"chars":100' in encoded.text
    assert references(json.loads(encoded.text)) == {_sha(big), _sha(other)}


def test_the_threshold_counts_utf8_bytes() -> None:
    assert not encode({"s": "é" * 32}, blob_threshold=64).blobs  # 64 bytes: not over
    encoded = encode({"s": "é" * 33}, blob_threshold=64)  # 66 bytes, 33 characters
    assert encoded.blobs and '"chars":33' in encoded.text


def test_a_long_string_that_needs_escaping_is_an_escaped_blob() -> None:
    text = "line\x00" * 40 + "caf\udce9"
    back, encoded = round_trip({"output": text}, threshold=64)
    assert back == {"output": text}
    (blob,) = encoded.blobs.values()
    assert blob == escape_text(text)
    storable(blob)
    assert encoded.text.startswith('{"output":{"$esc":{"$blob":')


def test_a_restored_payload_keeps_its_stored_form() -> None:
    encoded = encode({"s": "nul\x00"})
    back = restore(tagged(json.loads(encoded.text), encoded.text), {})
    assert type(back) is RestoredObject and back.stored == {"s": {"$esc": "nul\\0"}}
    assert stored_json(stored_form(back)) == encoded.text
    plain = {"s": "plain"}
    assert stored_form(plain) is plain


def test_stored_json_refuses_text_no_stored_value_holds() -> None:
    with pytest.raises(CanonicalJsonError, match="was it restored"):
        stored_json({"s": "nul\x00"})


def test_the_reader_tags_only_texts_with_markers() -> None:
    assert type(tagged({"a": 1}, '{"a": 1}')) is dict
    assert type(tagged({"a": "$HOME"}, '{"a": "$HOME"}')) is dict
    assert type(tagged({"$blob": SHA, "chars": 1}, '{"$blob": "..", "chars": 1}')) is (
        EncodedObject
    )
    # jsonb's own output (a space after the colon, keys by length) is recognised too.
    assert holds_markers('{"s": {"$esc": "a\\\\0"}}')
    assert not holds_markers('{"s": "\\"$esc\\": inside a string"}')


@pytest.mark.parametrize(
    "stored",
    [
        {"$esc": 1},
        {"$esc": "x", "y": 1},
        {"$obj": {"a": 1}},
        {"$obj": [["a"]]},
        {"$obj": [["a", 1], ["a", 2]]},
        {"$obj": [[1, 1]]},
        {"$blob": "nothex" * 10, "chars": 1},
        {"$blob": SHA},
    ],
)
def test_malformed_markers_are_refused(stored: dict[str, Any]) -> None:
    with pytest.raises(StoredFormError):
        restore(stored, {SHA: "x"})


def test_a_missing_blob_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        restore({"s": {"$blob": SHA, "chars": 1}}, {})


def test_errors_say_where() -> None:
    with pytest.raises(CanonicalJsonError, match=r"^a\.b\[1\]: NaN"):
        encode({"a": {"b": [1, float("nan")]}})
    with pytest.raises(CanonicalJsonError, match=r"^a\.nul\x00\[0\]: NaN"):
        encode({"a": {"nul\x00": [float("inf")]}})
    with pytest.raises(CanonicalJsonError, match="keys must be strings"):
        encode({1: "x"})


def _random_string(rng: random.Random) -> str:
    alphabet = ["a", "é", "\x00", "\\", '"', "$", "\udce9", "\ud83d", "😀", "0", "u", "d"]
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(["$esc", "$obj", "$blob", "chars", "$", ""])
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12 if pick < 0.9 else 90)))


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 4 or pick < 0.35:
        return rng.choice([_random_string(rng), rng.randrange(-5, 5), 1.5, None, True])
    if pick < 0.7:
        return {_random_string(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    if pick < 0.8:
        return {"$blob": SHA, "chars": rng.randrange(3)} if rng.random() < 0.5 else {"$esc": "x"}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


@pytest.mark.parametrize("seed", range(20))
def test_random_values_round_trip_exactly(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        value = {"v": _random_value(rng)}
        for threshold in (None, 8):
            back, encoded = round_trip(value, threshold)
            assert back == value, (value, encoded.text)
            storable(encoded.text)
            for blob in encoded.blobs.values():
                storable(blob)
            # Canonical: writing what was read gives the same text.
            assert encode(back, blob_threshold=threshold).text == encoded.text
            assert stored_json(json.loads(encoded.text)) == encoded.text


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_genuine_redacted_key_is_written_as_pairs_and_a_marker_reads_as_a_placeholder() -> None:
    """``$redacted`` is reserved: a model's object that has that key is stored as ``$obj``
    pairs (never mistaken for a marker), and a real marker reads as an empty value of the
    type it was."""
    genuine = {"args": {"$redacted": "0" * 64, "was": "string"}}
    encoded = encode(genuine)
    assert encoded.marked and "$obj" in encoded.text
    assert restore(encoded.stored, {}) == genuine
    stored = {
        "text": {"$redacted": "a" * 64, "was": "string"},
        "calls": {"$redacted": "b" * 64, "was": "array"},
        "usage": {"$redacted": "c" * 64, "was": "object"},
        "n": {"$redacted": "d" * 64, "was": "number"},
    }
    assert restore(stored, {}) == {"text": "[redacted]", "calls": [], "usage": {}, "n": 0}
    with pytest.raises(StoredFormError, match="malformed redaction marker"):
        restore({"x": {"$redacted": "a" * 64, "was": "secret"}}, {})
