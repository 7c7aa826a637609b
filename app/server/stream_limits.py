"""How many live streams each user has open in this API process, capped per user.

A stream holds a subscription and a connection for as long as the client likes; the cap keeps
one user (or one runaway script) from holding them all. One ``OpenStreams`` per app (kept in
the app's state), counted in the process: with several API processes a user may open the cap
in each. Deliberately: what the cap protects is the process's own (its sockets, its feeds,
its memory), and a count in the database would be left too high by every process that dies
with streams open (kill -9), locking users out until someone repairs it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

from app.errors import ChronicleError


class TooManyStreamsError(ChronicleError):
    """The user has ``limit`` streams open already."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"you have {limit} streams open already (server_max_streams_per_user); close one "
            "and retry"
        )
        self.limit = limit


class OpenStreams:
    """Open streams per user."""

    def __init__(self) -> None:
        self._open: Counter[UUID] = Counter()

    def count(self, user: UUID) -> int:
        return self._open[user]

    def total(self) -> int:
        return sum(self._open.values())

    @contextmanager
    def holding(self, user: UUID, limit: int) -> Iterator[None]:
        """One more stream for ``user`` while the block runs; ``TooManyStreamsError`` if it
        would exceed ``limit``."""
        if self._open[user] >= limit:
            raise TooManyStreamsError(limit)
        self._open[user] += 1
        try:
            yield
        finally:
            self._open[user] -= 1
            if self._open[user] <= 0:
                del self._open[user]
