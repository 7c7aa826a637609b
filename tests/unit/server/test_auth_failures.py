"""The failure limiter: an address that spends its failures is refused until they refill;
other addresses, and the failures' own refill, are unaffected."""

from __future__ import annotations

import pytest

from app.server.auth_failures import FailureLimiter, KnownCredentials, TooManyFailures


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_address_is_refused_after_its_failures_and_let_in_once_they_refill() -> None:
    clock = Clock()
    limiter = FailureLimiter(5, 60.0, clock=clock)
    for _ in range(5):
        limiter.check("10.0.0.1")
        limiter.failed("10.0.0.1")
    with pytest.raises(TooManyFailures) as refused:
        limiter.check("10.0.0.1")
    assert refused.value.retry_after == 12  # one failure refills in 60 / 5 s
    limiter.check("10.0.0.2")  # another address is not affected
    clock.now += 12
    limiter.check("10.0.0.1")


def test_failures_refill_up_to_the_capacity_only() -> None:
    clock = Clock()
    limiter = FailureLimiter(3, 30.0, clock=clock)
    limiter.failed("a")
    clock.now += 3600
    for _ in range(3):
        limiter.check("a")
        limiter.failed("a")
    with pytest.raises(TooManyFailures):
        limiter.check("a")


def test_the_number_of_addresses_remembered_is_bounded() -> None:
    clock = Clock()
    limiter = FailureLimiter(2, 60.0, max_addresses=10, clock=clock)
    for number in range(100):
        limiter.failed(f"10.0.0.{number}")
    assert len(limiter) <= 10


def test_known_credentials_are_kept_hashed_and_bounded() -> None:
    known = KnownCredentials(capacity=2)
    known.worked("cookie:a")
    known.worked("cookie:b")
    assert "cookie:a" in known and "cookie:c" not in known
    known.worked("cookie:a")  # the most recent use keeps it
    known.worked("cookie:c")
    assert "cookie:b" not in known and "cookie:a" in known and "cookie:c" in known
    known.refused("cookie:a")
    assert "cookie:a" not in known
    assert all(len(key) == 32 for key in known._seen)  # a digest, never the credential
