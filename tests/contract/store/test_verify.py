"""``verify`` of an intact session: the whole chain checked, page by page (the event store
contract: tests/contract/store/conftest.py). Tampering it must find is an attacker's work on
one implementation's storage: tests/integration/store/test_integrity.py, test_tampering.py."""

from __future__ import annotations

import uuid

from app.events import Message
from app.store import EventStore


async def _session_with(store: EventStore, n: int) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [Message(content=f"m{i}") for i in range(1, n + 1)])
    return session


async def test_verify_accepts_an_intact_chain(store: EventStore) -> None:
    session = await _session_with(store, 5)
    report = await store.verify(session)
    assert report.ok and report.checked == 5 and report.first_bad_seq is None


async def test_verify_pages_through_long_sessions(store: EventStore) -> None:
    session = await _session_with(store, 25)
    report = await store.verify(session, page_size=7)
    assert report.ok and report.checked == 25
