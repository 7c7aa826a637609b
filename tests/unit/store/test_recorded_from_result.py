"""Building the recorded events of an append from what the database returned: each field in
its place (the builder makes the tuples positionally), rows paired by seq."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from app.events import Message
from app.events.masking import SecretMasker
from app.store.append import encode_batch, recorded_from_result
from app.store.records import RecordedEvent

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _row(seq: int) -> dict[str, object]:
    return {
        "seq": seq,
        "global_position": 100 + seq,
        "tx": 7,
        "created_at": NOW,
        "hash": bytes([seq]) * 32,
    }


def test_each_field_in_its_place_and_rows_paired_by_seq() -> None:
    events = [Message(content=f"m{i}", cause=None) for i in range(3)]
    batch = encode_batch(events, 1 << 20, SecretMasker())
    session = uuid.uuid4()
    # The database may return the rows in any order: they pair with the events by seq.
    recorded = recorded_from_result(session, batch, [_row(3), _row(1), _row(2)])  # type: ignore[list-item]
    expected = [
        RecordedEvent(
            global_position=100 + i + 1,
            session_id=session,
            seq=i + 1,
            event_id=event.event_id,
            tx=7,
            kind="message",
            source=event.source,
            cause=None,
            payload={"content": f"m{i}"},
            schema_version=Message.schema_version,
            created_at=NOW,
            hash=bytes([i + 1]) * 32,
        )
        for i, event in enumerate(events)
    ]
    assert recorded == expected
    assert all(type(event) is RecordedEvent for event in recorded)
    assert recorded[0].payload == {"content": "m0"} and recorded[2].hash == b"\x03" * 32


def test_a_row_count_that_does_not_match_the_batch_is_an_error() -> None:
    batch = encode_batch([Message(content="a"), Message(content="b")], 1 << 20, SecretMasker())
    with pytest.raises(ValueError):
        recorded_from_result(uuid.uuid4(), batch, [_row(1)])  # type: ignore[list-item]
