"""Payloads PostgreSQL cannot hold as they are, and long ones, come back whole from every
reader: ``append``'s answer, ``read``, ``read_all``, ``subscribe`` and ``subscribe_all`` of
another client, the typed events, and ``verify`` (the event store contract:
tests/contract/store/conftest.py).

Before the stored form (app/events/stored_form.py) and migration 0004: a string with NUL or a
lone surrogate raised ``InvalidEventError`` (the model call or observation was lost), and a
payload over ``max_event_bytes`` (1 MiB: a 1.2 MB ``create``, a 5 MB command output) raised
``EventTooLargeError``: every round trip below failed at its ``append``, except the marker
look-alike, which guards the new form (a payload that merely looks like an escape or a blob
reference must come back as it was).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from app.store import EventStore, RecordedEvent
from tests.support.payloads import CASES


def _payloads(events: list[RecordedEvent]) -> list[dict[str, Any]]:
    return [event.payload for event in events]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_round_trip_through_every_reader(
    case: str, store: EventStore, other: EventStore
) -> None:
    events = CASES[case]()
    expected = [event.payload() for event in events]
    session = uuid.uuid4()
    async with other.subscribe(session) as live, other.subscribe_all() as everything:
        recorded = await store.append(session, events, expected_seq=0)
        assert _payloads(recorded) == expected  # the events append returns: no fetch
        assert _payloads(await store.read(session)) == expected
        assert _payloads(await other.read(session)) == expected
        assert _payloads([e for e in await other.read_all() if e.session_id == session]) == (
            expected
        )
        delivered = [await asyncio.wait_for(anext(live), 10) for _ in events]
        assert _payloads(delivered) == expected
        seen: list[RecordedEvent] = []
        while len(seen) < len(events):
            event = await asyncio.wait_for(anext(everything), 10)
            if event.session_id == session:
                seen.append(event)
        assert _payloads(seen) == expected
        # The typed events come back whole too.
        assert [e.event().payload() for e in delivered] == expected
    report = await store.verify(session)
    assert report.ok, report.reason
