"""Trace and span ids derived from the log: exporting a session twice gives the same ids, so
a backend that receives it twice sees one trace (and a collector can deduplicate spans).

The trace id is the session's UUID (16 bytes, as OTLP's trace id); a span's id is the first
8 bytes of SHA-256 over the session and the seq of the event it stands for (0: the session's
own ``invoke_agent`` span). OTLP calls an all-zero id invalid, so one is never given.
"""

from __future__ import annotations

import hashlib
from uuid import UUID

#: The seq the session's own span is derived from (events start at 1).
SESSION_SPAN = 0


def trace_id(session: UUID) -> bytes:
    """The session's trace id: its UUID's 16 bytes (a nil UUID gets a hash of itself)."""
    if session.int == 0:
        return hashlib.sha256(b"chronicle trace\0" + session.bytes).digest()[:16]
    return session.bytes


def span_id(session: UUID, seq: int) -> bytes:
    """The id of the span standing for event ``seq`` of the session (8 bytes, never zero)."""
    digest = hashlib.sha256(session.bytes + seq.to_bytes(8, "big")).digest()
    return digest[:8] if any(digest[:8]) else digest[8:16]
