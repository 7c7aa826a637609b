"""``CallLog``: what the model gateway needs of the log it records calls in.

A session's appends (``SessionLog``), the masker known secrets are masked with before a
failure's message is recorded, and the prompt messages an ``llm.call`` names, stored once
each. ``EventStore`` is one; so is a replay's buffered log (app/replay/log.py), which keeps
them in memory until it writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from app.events.masking import SecretMasker
from app.store import SessionLog


class CallLog(SessionLog, Protocol):
    """A ``SessionLog`` with its masker and the prompt messages' store (see the module)."""

    @property
    def masker(self) -> SecretMasker: ...

    async def put_messages(self, hashes: Sequence[str], texts: Sequence[str]) -> int:
        """Store prompt messages once each under their sha256 hex; the number newly stored."""
        ...
