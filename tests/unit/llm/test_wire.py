"""Requests as they can travel: lone surrogates backslash-escaped, nothing else touched."""

from __future__ import annotations

import json

from app.llm.wire import for_the_wire


def test_lone_surrogates_are_escaped_and_the_rest_kept() -> None:
    message = {"role": "tool", "content": "caf\udce9.txt\x00 ok", "name": "str_replace_editor"}
    sent = for_the_wire(message)
    assert sent == {
        "role": "tool",
        "content": "caf\\udce9.txt\x00 ok",
        "name": "str_replace_editor",
    }
    json.dumps(sent, ensure_ascii=False).encode("utf-8")  # what failed before: not UTF-8
    assert message["content"] == "caf\udce9.txt\x00 ok"  # the recorded prompt is unchanged


def test_a_value_without_surrogates_is_the_same_object() -> None:
    message = {"role": "user", "content": ["café", {"text": "naïve"}]}
    assert for_the_wire(message) is message
    nested = {"a": [{"b": "\ud800"}], "c": "x"}
    assert for_the_wire(nested) == {"a": [{"b": "\\ud800"}], "c": "x"}
