"""Counting connections per address: an IPv6 host by its /64, a mapped IPv4 as IPv4, the
operator's proxies not at all, and places given back."""

from __future__ import annotations

import pytest

from app.server.connection_addresses import AddressCounts, AddressFull, address_key


def test_an_ipv6_host_counts_by_its_64_and_a_mapped_ipv4_as_ipv4() -> None:
    assert address_key("2001:db8:1:2::1") == address_key("2001:db8:1:2:ffff::9")
    assert address_key("2001:db8:1:2::1") != address_key("2001:db8:1:3::1")
    assert address_key("::ffff:198.51.100.7") == "198.51.100.7"


def test_an_address_holds_its_most_and_gets_places_back() -> None:
    counts = AddressCounts(2)
    first, second = counts.take("198.51.100.7"), counts.take("198.51.100.7")
    with pytest.raises(AddressFull):
        counts.take("198.51.100.7")
    assert counts.take("198.51.100.8") is not None
    counts.give_back(first)
    assert counts.take("198.51.100.7") == second
    counts.give_back(None)  # a connection that was not counted


def test_the_named_proxies_are_not_counted() -> None:
    counts = AddressCounts(1, "10.0.0.0/8, 192.0.2.1")
    assert [counts.take("10.1.2.3") for _ in range(5)] == [None] * 5
    assert counts.take("192.0.2.1") is None
    assert counts.take("192.0.2.2") is not None
    assert AddressCounts(1, "*").take("203.0.113.1") is None
