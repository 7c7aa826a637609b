"""A server shutting down is "try again", never "the database refused the write"."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest

from app.store.append import EncodedBatch
from app.store.coalescer import AppendCoalescer, AppendRefused


class _Connection:
    """Answers every call with the error it was given, as a server would."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.terminated = False

    async def fetch(self, *_: Any) -> list[Any]:
        raise self.error

    async def fetchrow(self, *_: Any) -> Any:
        raise self.error

    def terminate(self) -> None:
        self.terminated = True

    def get_server_pid(self) -> int:
        return 4242

    def is_closed(self) -> bool:
        return self.terminated


def _coalescer(connection: _Connection) -> AppendCoalescer:
    async def connect() -> Any:
        return connection

    return AppendCoalescer(connect)


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
    connection = _Connection(error)
    coalescer = _coalescer(connection)
    with pytest.raises(type(error)):
        asyncio.run(coalescer.append(uuid.uuid4(), 0, _batch()))
    # A connection to a server going away is dropped, never handed to the next append, and
    # its backend's pid no longer counts as one of ours (the server may give it to another).
    assert connection.terminated
    assert coalescer.backend_pids == set()


def test_a_refusal_stays_a_refusal() -> None:
    error = asyncpg.UniqueViolationError("duplicate key")
    connection = _Connection(error)
    coalescer = _coalescer(connection)
    with pytest.raises(AppendRefused):
        asyncio.run(coalescer.append(uuid.uuid4(), 0, _batch()))
    # Refused: the transaction rolled back, the connection is kept for the next append.
    assert not connection.terminated
    assert coalescer.backend_pids == {4242}
