"""Bearer tokens remembered for a few seconds, so a busy client costs no database round trip
per request.

Looking a token up costs two statements (its row, and ``last_used_at``); at hundreds of
requests a second that is most of a cheap request's time. A principal found live is kept for
``ttl`` seconds under the token's sha256 (the token itself is not kept), so a token revoked
elsewhere (``chronicle tokens revoke``, another API process) keeps working here for at most
``ttl`` seconds: the bound the README states for ``server_token_cache_seconds``. Unknown,
revoked and expired tokens are never remembered (each such request asks the database, and
counts against the address's rate limit), and a remembered token past its own ``expires_at``
is refused at once.

Only API tokens are cached: a browser login's cookie is checked on every request, so a
logout (which revokes it in this process) takes effect at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from app.store.users import Principal, token_hash

#: How many tokens one process remembers; the oldest entry goes first beyond it.
MAX_ENTRIES = 10_000


class TokenCache:
    """Live principals by token hash, each for at most ``ttl`` seconds (0: none kept)."""

    def __init__(
        self,
        ttl: float,
        *,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._max_entries = max_entries
        self._clock = clock
        self._entries: dict[bytes, tuple[float, Principal]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    async def principal(
        self, token: str, look_up: Callable[[str], Awaitable[Principal | None]]
    ) -> Principal | None:
        """The token's principal: remembered if still fresh, else ``look_up(token)`` (and
        remembered when live)."""
        key = token_hash(token)
        now = self._clock()
        found = self._entries.get(key)
        if found is not None:
            kept_until, principal = found
            if now < kept_until and not _expired(principal):
                return principal
            del self._entries[key]
        looked_up = await look_up(token)
        if looked_up is not None and self.ttl > 0:
            if len(self._entries) >= self._max_entries:
                self._drop_oldest()
            self._entries[key] = (now + self.ttl, looked_up)
        return looked_up

    def forget(self, token: str) -> None:
        """Drop the token (when it is revoked in this process)."""
        self._entries.pop(token_hash(token), None)

    def _drop_oldest(self) -> None:
        now = self._clock()
        for key in [key for key, (until, _) in self._entries.items() if until <= now]:
            del self._entries[key]
        while len(self._entries) >= self._max_entries:
            del self._entries[next(iter(self._entries))]


def _expired(principal: Principal) -> bool:
    return principal.expires_at is not None and principal.expires_at <= datetime.now(UTC)
