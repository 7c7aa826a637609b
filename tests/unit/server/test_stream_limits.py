"""The per-user cap on open streams: counted per user, refused past the cap, given back when a
stream ends however it ends."""

from __future__ import annotations

import uuid

import pytest

from app.server.stream_limits import OpenStreams, TooManyStreamsError


def test_a_user_gets_up_to_the_cap_and_others_are_counted_apart() -> None:
    streams = OpenStreams()
    alice, bob = uuid.uuid4(), uuid.uuid4()
    with streams.holding(alice, 2), streams.holding(alice, 2):
        with pytest.raises(TooManyStreamsError, match="2 streams open already"):
            with streams.holding(alice, 2):
                pass
        with streams.holding(bob, 2):
            assert streams.count(bob) == 1
        assert streams.count(alice) == 2
    assert streams.count(alice) == 0
    assert streams.total() == 0


def test_a_stream_that_fails_gives_its_slot_back() -> None:
    streams = OpenStreams()
    user = uuid.uuid4()
    with pytest.raises(RuntimeError):
        with streams.holding(user, 1):
            raise RuntimeError("the client went away")
    with streams.holding(user, 1):
        assert streams.count(user) == 1
