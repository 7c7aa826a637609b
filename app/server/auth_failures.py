"""Failed authentication, rate limited per client address.

Each address has a bucket of ``capacity`` failures that refills over ``window`` seconds. A
request with credentials that are refused (an unknown, revoked or expired token or login
cookie, a wrong or used sign-in code) takes one failure from its address's bucket; while the
bucket is empty every request from that address that presents credentials is answered 429
with ``Retry-After`` before anything is looked up, so guessing costs the guesser time and the
database nothing. Successful requests take nothing. The limit is per API process (as the
request rate limit is) and per address as the server sees it: behind a proxy that is the
proxy's, so its clients share one bucket.

So that a guesser does not lock out the people who share its address (a proxy, a NAT), a
credential this process has seen work (``KnownCredentials``: a sha256 of it, nothing more)
is still looked up while its address is blocked; only credentials never seen live are
answered 429 unread. A guess is never among them (tokens and codes are 256-bit random), so
the lookups a blocked address can cause are those of credentials its users really hold.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable

from app.errors import ChronicleError

#: How many addresses one process remembers; full buckets are dropped first beyond it.
MAX_ADDRESSES = 10_000


class TooManyFailures(ChronicleError):
    """The address spent its failures; try again after ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"too many failed sign-ins or unknown tokens from this address; try again in "
            f"{retry_after} s"
        )
        self.retry_after = retry_after


class FailureLimiter:
    """A token bucket of failures per address."""

    def __init__(
        self,
        capacity: int,
        window: float = 60.0,
        *,
        max_addresses: int = MAX_ADDRESSES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self._refill_per_second = capacity / window
        self._max_addresses = max_addresses
        self._clock = clock
        #: address -> (failures left, when counted)
        self._buckets: dict[str, tuple[float, float]] = {}

    def __len__(self) -> int:
        """How many addresses are remembered."""
        return len(self._buckets)

    def _left(self, address: str, now: float) -> float:
        found = self._buckets.get(address)
        if found is None:
            return float(self.capacity)
        left, at = found
        return min(float(self.capacity), left + (now - at) * self._refill_per_second)

    def check(self, address: str) -> None:
        """Raise ``TooManyFailures`` while the address has no failure left."""
        left = self._left(address, self._clock())
        if left < 1:
            raise TooManyFailures(max(1, math.ceil((1 - left) / self._refill_per_second)))

    def failed(self, address: str) -> None:
        """Count one failure against the address."""
        now = self._clock()
        left = self._left(address, now) - 1
        if address not in self._buckets and len(self._buckets) >= self._max_addresses:
            self._forget_full(now)
        self._buckets[address] = (max(left, 0.0), now)

    def _forget_full(self, now: float) -> None:
        for address in [a for a in self._buckets if self._left(a, now) >= self.capacity]:
            del self._buckets[address]
        while len(self._buckets) >= self._max_addresses:
            del self._buckets[next(iter(self._buckets))]


class KnownCredentials:
    """The credentials that worked in this process lately (their sha256, the most recent
    ``capacity``): these pass a blocked address's 429 and are looked up as usual, which still
    refuses one revoked since."""

    def __init__(self, capacity: int = MAX_ADDRESSES) -> None:
        self._capacity = capacity
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    @staticmethod
    def _key(credential: str) -> bytes:
        return hashlib.sha256(credential.encode()).digest()

    def __contains__(self, credential: str) -> bool:
        return self._key(credential) in self._seen

    def worked(self, credential: str) -> None:
        key = self._key(credential)
        self._seen[key] = None
        self._seen.move_to_end(key)
        while len(self._seen) > self._capacity:
            self._seen.popitem(last=False)

    def refused(self, credential: str) -> None:
        self._seen.pop(self._key(credential), None)
