"""The gate before each model call where a draining worker stops a session: open until the
worker drains, then the next call waits there and the model is never asked."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from app.llm import LlmReply
from app.sessions.step_gate import GatedGateway, StepGate


class CountingGateway:
    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, session_id: uuid.UUID, *args: Any, **kwargs: Any) -> LlmReply:
        self.calls += 1
        return LlmReply.model_construct()


async def test_the_gate_is_open_until_draining_then_holds_the_next_call() -> None:
    draining = asyncio.Event()
    gate = StepGate(draining)
    inner = CountingGateway()
    gateway = GatedGateway(inner, gate)
    await gateway.complete(uuid.uuid4(), [], [])
    assert inner.calls == 1 and not gate.reached.is_set()
    draining.set()
    held = asyncio.create_task(gateway.complete(uuid.uuid4(), [], []))
    async with asyncio.timeout(5):
        await gate.reached.wait()
    await asyncio.sleep(0.05)
    assert not held.done() and inner.calls == 1  # the model is not called
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held
    assert inner.calls == 1
