"""Bounded output: keep the head and the tail of what a command prints, count the rest."""

from __future__ import annotations

import threading


class CappedBuffer:
    """Collects bytes, keeping at most ``head`` bytes from the start and ``tail`` from the end."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.total = 0
        self.changed = threading.Condition()

    def write(self, data: bytes) -> None:
        with self.changed:
            self.total += len(data)
            room = self._head_limit - len(self.head)
            if room > 0:
                self.head += data[:room]
                data = data[room:]
            if data:
                self.tail += data
                excess = len(self.tail) - self._tail_limit
                if excess > 0:
                    del self.tail[:excess]
                    self.dropped += excess
            self.changed.notify_all()

    def contents(self) -> bytes:
        with self.changed:
            return bytes(self.head + self.tail)


def truncate_text(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and the tail of ``text`` around a marker when it is over ``limit`` chars."""
    if len(text) <= limit:
        return text, False
    half = limit // 2
    removed = len(text) - 2 * half
    marker = f"\n[... {removed:,} characters truncated ...]\n"
    return text[:half] + marker + text[-half:], True


def decode(data: bytes) -> str:
    """Bytes as text; anything that is not UTF-8 becomes replacement characters."""
    return data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
