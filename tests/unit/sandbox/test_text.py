"""Every answer of the sandbox is valid UTF-8, whatever bytes a file name holds."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.fixture
def text(sandbox_module: Callable[[str], ModuleType]) -> ModuleType:
    return sandbox_module("text")


def test_surrogates_are_written_out(text: ModuleType) -> None:
    assert text.printable("caf\udce9.txt") == "caf\\xe9.txt"  # a byte that is not UTF-8
    assert text.printable("odd\ud800") == "odd\\ud800"  # stands for no byte
    assert text.printable("plain caf\u00e9") == "plain caf\u00e9"
    assert text.has_escapes("caf\udce9") and not text.has_escapes("caf\u00e9")


def test_json_bytes_never_fails(text: ModuleType) -> None:
    value = {"path\udcff": ["caf\udce9", 1, None, {"deep": "\udc80"}], "ok": "\u20ac"}
    data = text.json_bytes(value)
    data.decode("utf-8")  # valid UTF-8
    assert json.loads(data) == {
        "path\\xff": ["caf\\xe9", 1, None, {"deep": "\\x80"}],
        "ok": "\u20ac",
    }
    assert text.json_bytes({"a": "\u20ac"}) == '{"a": "\u20ac"}'.encode()
