"""The gateway's stored hashes stay bounded, keep the ones it asks about, and forget the
oldest (before: a set that grew by two hashes a step, for as long as the session ran)."""

from __future__ import annotations

from app.llm.stored_keys import StoredKeys


def test_bounded_forgetting_the_oldest() -> None:
    keys = StoredKeys(keep=3)
    keys.update(["a", "b", "c", "d"])
    assert len(keys) == 3
    assert "a" not in keys
    assert all(key in keys for key in "bcd")


def test_adding_again_makes_a_key_recent() -> None:
    keys = StoredKeys(keep=3)
    keys.update(["tools", "m1", "m2"])
    keys.add("tools")  # the tool list is asked about every step
    keys.update(["m3", "m4"])
    assert "tools" in keys
    assert "m1" not in keys and "m2" not in keys


def test_a_long_session_keeps_the_bound() -> None:
    keys = StoredKeys(keep=100)
    for step in range(10_000):
        keys.update([f"user{step}", f"assistant{step}", "tools"])
    assert len(keys) == 100
    assert "tools" in keys and "assistant9999" in keys
