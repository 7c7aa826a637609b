"""The session list's cursor survives the round trip and refuses anything it did not make."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from app.server.cursors import BadCursorError, decode_cursor, encode_cursor


def test_a_cursor_round_trips_to_the_same_row_key() -> None:
    moment = datetime(2026, 11, 30, 16, 0, 1, 123456, tzinfo=UTC)
    session = uuid.uuid4()
    cursor = encode_cursor(moment, session)
    assert "=" not in cursor and "/" not in cursor and "+" not in cursor  # URL-safe as it is
    assert decode_cursor(cursor) == (moment, session)


@pytest.mark.parametrize(
    "cursor",
    [
        "zzz",
        "",
        "bm90IGpzb24",  # base64 of "not json"
        "WyIyMDI2LTExLTMwVDE2OjAwOjAxIiwgIngiXQ",  # ["2026-11-30T16:00:01", "x"]
        "WzFd",  # [1]
    ],
)
def test_a_cursor_this_api_did_not_make_is_refused(cursor: str) -> None:
    with pytest.raises(BadCursorError, match="start again"):
        decode_cursor(cursor)


def test_a_cursor_without_a_time_zone_is_refused() -> None:
    import base64

    raw = base64.urlsafe_b64encode(f'["2026-11-30T16:00:01", "{uuid.uuid4()}"]'.encode())
    with pytest.raises(BadCursorError):
        decode_cursor(raw.decode())
