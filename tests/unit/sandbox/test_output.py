"""Bounded command output: head and tail cut at character boundaries, every removed
character counted (the marker was wrong above ~120k characters before)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from types import ModuleType

import pytest

MARKER = re.compile(r"\n\[\.\.\. ([\d,]+) characters truncated \.\.\.\]\n")
TEXTS = {
    "ascii": "the quick brown fox jumps over the lazy dog " * 400,
    "multibyte": "a\u00e9\u20ac\U0001f600\u4e2d" * 3000,
}


@pytest.fixture
def output(sandbox_module: Callable[[str], ModuleType]) -> ModuleType:
    return sandbox_module("output")


@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.parametrize("chunking", ["bytewise", "random", "whole"])
def test_buffer_cuts_at_characters_and_counts_the_rest(
    output: ModuleType, name: str, chunking: str
) -> None:
    text = TEXTS[name]
    data = text.encode()
    buffer = output.CappedBuffer(head=1001, tail=999)
    sizes = {"bytewise": lambda: 1, "random": lambda: random.randint(1, 37)}.get(
        chunking, lambda: len(data)
    )
    position = 0
    while position < len(data):
        size = sizes()
        buffer.write(data[position : position + size])
        position += size
    head, tail = bytes(buffer.head).decode(), bytes(buffer.tail).decode()  # no cut character
    assert text.startswith(head) and text.endswith(tail)
    assert len(buffer.head) <= 1001 and len(buffer.tail) <= 999
    assert len(head) + buffer.dropped_characters + len(tail) == len(text)
    assert buffer.dropped == len(data) - len(buffer.head) - len(buffer.tail)


@pytest.mark.parametrize("dropped", [0, 5, 10_000_000])
def test_truncate_around_counts_every_removed_character(output: ModuleType, dropped: int) -> None:
    head, tail = "h" * 40, "t" * 50
    text, truncated = output.truncate_around(head, dropped, tail, 30)
    assert truncated
    found = MARKER.search(text)
    assert found and text[: found.start()] == "h" * 15 and text[found.end() :] == "t" * 15
    assert int(found.group(1).replace(",", "")) == 40 + dropped + 50 - 30


def test_short_text_is_left_alone(output: ModuleType) -> None:
    assert output.truncate_text("short", 30) == ("short", False)
    assert output.truncate_around("ab", 0, "cd", 4) == ("abcd", False)
    text, truncated = output.truncate_text("x" * 31, 30)
    assert truncated and "[... 1 characters truncated ...]" in text


def test_a_cut_character_is_never_split(output: ModuleType) -> None:
    euro = "\u20ac".encode()  # three bytes
    assert output.complete_length(b"ab" + euro[:2]) == 2
    assert output.complete_length(b"ab" + euro) == 5
    assert output.start_of_character(euro * 2, 1) == 3
    assert output.characters_in(euro * 4 + b"abc") == 7
