"""What only ``MemoryLog`` does (the rules it shares with the store are the contract's:
tests/contract/store/test_session_log.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.events import Message
from app.store import MemoryLog


async def test_closing_the_log_ends_its_subscriptions() -> None:
    log = MemoryLog()
    session = uuid.uuid4()
    await log.append(session, [Message(content="one")])
    stream = log.subscribe(session)
    assert (await anext(stream)).seq == 1
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)  # one turn of the loop: the task starts and waits for an append
    assert not waiting.done()
    await log.close()
    async with asyncio.timeout(5):  # a guard: it ends at once, or never
        with pytest.raises(StopAsyncIteration):
            await waiting
