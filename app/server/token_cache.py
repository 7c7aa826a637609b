"""Bearer tokens remembered for a few seconds, so a busy client costs no database round trip
per request, yet a revoked token stops working at once.

Looking a token up costs two statements (its row, and ``last_used_at``); at hundreds of
requests a second that is most of a cheap request's time. A principal found live is kept for
``ttl`` seconds under the token's sha256 (the token itself is not kept), and trusted only
while the process's ``CredentialWatch`` listens and has heard no change since the lookup: a
token revoked or a user disabled, removed or demoted anywhere (``chronicle tokens revoke``,
another API process, plain SQL) sends a notification that makes every API process forget
every token it remembers. While the watch is not listening (not started yet, or its connection
lost) nothing is remembered, so a change is never missed; ``ttl`` remains the bound should a
notification be lost on a live connection. Unknown, revoked and expired tokens are never
remembered (each such request asks the database and counts as a failed authentication), and a
remembered token past its own ``expires_at`` is refused at once.

Only API tokens are cached: a browser login's cookie is checked on every request.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

from app.sessions.sql.users import Principal, token_hash

#: How many tokens one process remembers; the oldest entry goes first beyond it.
MAX_ENTRIES = 10_000


class ChangeWatch(Protocol):
    """What the cache needs of a watch of credential changes (``CredentialWatch``)."""

    @property
    def live(self) -> bool: ...

    @property
    def generation(self) -> int: ...


class TokenCache:
    """Live principals by token hash, each for at most ``ttl`` seconds (0: none kept), and
    only within the watch's generation they were looked up in."""

    def __init__(
        self,
        ttl: float,
        watch: ChangeWatch,
        *,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._watch = watch
        self._max_entries = max_entries
        self._clock = clock
        self._entries: dict[bytes, tuple[float, int, Principal]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    async def principal(
        self, token: str, look_up: Callable[[str], Awaitable[Principal | None]]
    ) -> Principal | None:
        """The token's principal: remembered if still trusted, else ``look_up(token)`` (and
        remembered when live and nothing changed meanwhile)."""
        key = token_hash(token)
        now = self._clock()
        generation = self._watch.generation
        found = self._entries.get(key)
        if found is not None:
            kept_until, kept_in, principal = found
            if (
                now < kept_until
                and kept_in == generation
                and self._watch.live
                and not _expired(principal)
            ):
                return principal
            del self._entries[key]
        looked_up = await look_up(token)
        trusted = self._watch.live and self._watch.generation == generation
        if looked_up is not None and self.ttl > 0 and trusted:
            if len(self._entries) >= self._max_entries:
                self._drop_stale()
            self._entries[key] = (now + self.ttl, generation, looked_up)
        return looked_up

    def forget(self, token: str) -> None:
        """Drop the token (when it is revoked in this process)."""
        self._entries.pop(token_hash(token), None)

    def _drop_stale(self) -> None:
        now = self._clock()
        generation = self._watch.generation
        for key in [
            key
            for key, (until, kept_in, _) in self._entries.items()
            if until <= now or kept_in != generation
        ]:
            del self._entries[key]
        while len(self._entries) >= self._max_entries:
            del self._entries[next(iter(self._entries))]


def _expired(principal: Principal) -> bool:
    return principal.expires_at is not None and principal.expires_at <= datetime.now(UTC)
