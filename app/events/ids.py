"""Event ids: UUIDv7, so ids sort by creation time and index inserts stay local."""

from __future__ import annotations

import os
import time
import uuid


def new_event_id() -> uuid.UUID:
    """A version-7 UUID: 48 bits of Unix milliseconds, then random bits."""
    millis = time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    value &= ~(0xF << 76)
    value |= 0x7 << 76  # version 7
    value &= ~(0x3 << 62)
    value |= 0x2 << 62  # RFC 4122 variant
    return uuid.UUID(int=value)
