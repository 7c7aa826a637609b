"""Control characters are shown escaped, and what JSON output holds keeps its value."""

from __future__ import annotations

import io
import json

from app.cli.terminal import EscapingStream, escape_controls, raw


def test_controls_are_escaped_and_newlines_and_tabs_kept() -> None:
    assert escape_controls("\x1b]0;pwned\x07\x1b[2J") == "\\x1b]0;pwned\\x07\\x1b[2J"
    assert escape_controls("a\tb\nc\rd\x00") == "a\tb\nc\\x0dd\\x00"
    assert escape_controls("\x7f\x9b31m\u202etxt.exe") == "\\u007f\\u009b31m\\u202etxt.exe"
    assert escape_controls("plain text, é, 漢字, ⏎") == "plain text, é, 漢字, ⏎"


def test_json_written_through_the_stream_keeps_its_value() -> None:
    value = {"title": "\x1b[2J\x9b\u202e\x7f", "n": [1, "é"]}
    target = io.StringIO()
    stream = EscapingStream(target)
    for text in (json.dumps(value, ensure_ascii=False), json.dumps(value)):
        target.seek(0)
        target.truncate()
        stream.write(text)
        written = target.getvalue()
        assert escape_controls(written) == written  # nothing a terminal acts on
        assert json.loads(written) == value


def test_raw_is_the_stream_under_the_escaping() -> None:
    target = io.StringIO()
    assert raw(EscapingStream(target)) is target
    assert raw(target) is target
