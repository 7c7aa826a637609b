"""A server shutting down is "try again", never "the database refused the write"."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest

from app.store.append import EncodedBatch
from app.store.coalescer import AppendCoalescer, AppendRefused


class _Pool:
    """Answers every call with the error it was given, as a server would."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def fetch(self, *_: Any) -> list[Any]:
        raise self.error


def _batch() -> EncodedBatch:
    return EncodedBatch(
        event_ids=[uuid.uuid4()],
        kinds=["message"],
        sources=["user"],
        causes=[None],
        payload_texts=['{"text": "hi"}'],
        versions=[1],
        payloads=[{"text": "hi"}],
        blobs={},
    )


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.CannotConnectNowError("the database system is shutting down"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    ],
)
def test_a_server_going_away_is_passed_on_for_a_retry(error: BaseException) -> None:
    coalescer = AppendCoalescer(_Pool(error))  # type: ignore[arg-type]
    with pytest.raises(type(error)):
        asyncio.run(coalescer.append(uuid.uuid4(), 0, _batch()))


def test_a_refusal_stays_a_refusal() -> None:
    error = asyncpg.UniqueViolationError("duplicate key")
    coalescer = AppendCoalescer(_Pool(error))  # type: ignore[arg-type]
    with pytest.raises(AppendRefused):
        asyncio.run(coalescer.append(uuid.uuid4(), 0, _batch()))
