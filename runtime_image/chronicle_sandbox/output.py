"""Bounded output: keep the head and the tail of what a command prints, count the rest.

What is dropped is counted in characters (UTF-8 text: every byte that does not continue a
character starts one), so the marker between head and tail says exactly how many characters
of the output are missing, however long it was and whatever bytes-to-characters ratio it had.
For output that is not UTF-8 the count is close (an undecodable byte is one character).
"""

from __future__ import annotations

import threading

#: Bytes that continue a multi-byte UTF-8 character (10xxxxxx).
CONTINUATION = bytes(range(0x80, 0xC0))


def characters_in(data: bytes) -> int:
    """How many characters the UTF-8 bytes ``data`` hold (cut at character boundaries)."""
    return len(data.translate(None, CONTINUATION))


def complete_length(data: bytes | bytearray) -> int:
    """The length of ``data`` without a multi-byte character cut off at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return len(data)
        if byte >= 0xC0:  # the start of the last character: is all of it there?
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) if back >= needed else len(data) - back
    return len(data)


def start_of_character(data: bytes | bytearray, index: int) -> int:
    """``index``, moved forward past continuation bytes (at most three) to where a character
    starts."""
    end = min(index + 3, len(data))
    while index < end and 0x80 <= data[index] < 0xC0:
        index += 1
    return index


class CappedBuffer:
    """Collects bytes, keeping at most ``head`` bytes from the start and ``tail`` from the end,
    both cut at character boundaries; ``dropped_characters`` counts what is between."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.head_full = False
        self.dropped = 0  # bytes
        self.dropped_characters = 0
        self.total = 0
        self.changed = threading.Condition()

    def write(self, data: bytes) -> None:
        with self.changed:
            self.total += len(data)
            if not self.head_full:
                room = self._head_limit - len(self.head)
                self.head += data[:room]
                data = data[room:]
                if len(self.head) >= self._head_limit:
                    self.head_full = True
                    keep = complete_length(self.head)  # a cut character goes on to the tail
                    data = bytes(self.head[keep:]) + data
                    del self.head[keep:]
            if data:
                self.tail += data
                excess = len(self.tail) - self._tail_limit
                if excess > 0:
                    cut = start_of_character(self.tail, excess)
                    self.dropped += cut
                    self.dropped_characters += characters_in(bytes(self.tail[:cut]))
                    del self.tail[:cut]
            self.changed.notify_all()

    def contents(self) -> bytes:
        with self.changed:
            return bytes(self.head + self.tail)


def marker(removed: int) -> str:
    return f"\n[... {removed:,} characters truncated ...]\n"


def truncate_text(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and the tail of ``text`` around a marker when it is over ``limit`` chars."""
    return truncate_around(text, 0, "", limit)


def truncate_around(head: str, dropped: int, tail: str, limit: int) -> tuple[str, bool]:
    """``head`` and ``tail``, with ``dropped`` characters already gone between them, cut to
    ``limit`` characters around one marker that counts every character removed."""
    if not dropped:
        text = head + tail
        if len(text) <= limit:
            return text, False
        head = tail = text  # one text: its start is the head, its end the tail
        whole = len(text)
    else:
        whole = len(head) + dropped + len(tail)
    half = limit // 2
    kept_head = head[:half]
    kept_tail = tail[max(len(tail) - half, 0) :] if half else ""
    return kept_head + marker(whole - len(kept_head) - len(kept_tail)) + kept_tail, True


def decode(data: bytes) -> str:
    """Bytes as text; anything that is not UTF-8 becomes replacement characters."""
    return data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
