"""A gate before each model call: where a draining worker stops a session cleanly.

A step is a model call and the actions it asks for, run until answered. Between two steps
nothing is in flight (no command running, no model call paid for and unanswered), so a worker
asked to shut down lets the step in flight finish and stops the session at the next gate, just
before the next model call; another worker continues from the log without reporting anything
as interrupted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from uuid import UUID

from app.agent.codeact import ModelGateway
from app.llm import LlmReply
from app.llm.retry import Failure

BeforeModelCall = Callable[[], Awaitable[None]]


class GatedGateway:
    """A ``ModelGateway`` that awaits ``before_call()`` before each call it passes on."""

    def __init__(self, gateway: ModelGateway, before_call: BeforeModelCall) -> None:
        self._gateway = gateway
        self._before_call = before_call

    async def complete(
        self,
        session_id: UUID,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        cause: int | None = None,
        on_retry: Callable[[Failure, float], Awaitable[None]] | None = None,
        record: bool = True,
        previous: Mapping[str, Any] | None = None,
    ) -> LlmReply:
        await self._before_call()
        return await self._gateway.complete(
            session_id,
            messages,
            tools,
            cause=cause,
            on_retry=on_retry,
            record=record,
            previous=previous,
        )


class StepGate:
    """Open until ``draining`` is set; then the next model call waits here for good, and
    ``reached`` tells the session's owner that the run can be cancelled with nothing lost."""

    def __init__(self, draining: asyncio.Event) -> None:
        self.draining = draining
        self.reached = asyncio.Event()

    async def __call__(self) -> None:
        if not self.draining.is_set():
            return
        self.reached.set()
        await asyncio.Future()  # until the owner cancels the run
