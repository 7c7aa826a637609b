"""How deep a JSON body nests, measured without decoding it (strings' brackets not counted)."""

from __future__ import annotations

from app.server.request_body import MAX_JSON_DEPTH, json_depth_exceeds


def nested(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def test_depth_up_to_the_limit_passes_and_one_more_does_not() -> None:
    assert not json_depth_exceeds(nested(MAX_JSON_DEPTH))
    assert json_depth_exceeds(nested(MAX_JSON_DEPTH + 1))
    assert json_depth_exceeds(b'{"token": ' + nested(100_000) + b"}")


def test_many_brackets_side_by_side_are_not_depth() -> None:
    assert not json_depth_exceeds(b"[" + b",".join([b"[{}]"] * 10_000) + b"]")


def test_brackets_inside_strings_are_not_counted() -> None:
    assert not json_depth_exceeds(b'["' + b"[{" * 10_000 + b'"]')
    assert not json_depth_exceeds(b'["\\"' + b"[" * 10_000 + b'"]')  # an escaped quote
    assert json_depth_exceeds(b'["a\\\\"' + b"," + nested(MAX_JSON_DEPTH) + b"]")
