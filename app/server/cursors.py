"""The session list's page cursor: the last row's ``(created_at, session_id)``, opaque.

Encoded as URL-safe base64 of a small JSON array, so a client passes it back unchanged and a
page costs the same however deep it is (keyset pagination). A cursor that does not decode is
refused, not ignored (a silently restarted list would repeat what the client has seen).
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from uuid import UUID

import orjson

from app.errors import ChronicleError


class BadCursorError(ChronicleError, ValueError):
    """The cursor is not one this API handed out."""


def encode_cursor(created_at: datetime, session_id: UUID) -> str:
    raw = orjson.dumps([created_at.isoformat(), str(session_id)])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, session = orjson.loads(raw)
        moment = datetime.fromisoformat(created)
        if moment.tzinfo is None:
            raise ValueError("no time zone")
        return moment, UUID(session)
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError) as exc:
        raise BadCursorError(
            "the cursor is not one this API returned; start again without it"
        ) from exc
