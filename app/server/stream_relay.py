"""Relaying a live tail to one client through a bounded buffer, so a slow client costs only
itself.

The pump reads the source (the client's follower of the session's feed, which reads the
store only for what the feed no longer holds) into a buffer of at most ``capacity`` events;
the sender takes from the buffer and sends. A client that reads slowly only makes its own
sends wait: the agent appends to the log and other clients follow the feed, whatever this
one does. A client is *too far behind* when its buffer has stayed full for
``stall_seconds``: the relay stops, cancelling a send that may be stuck on a client that
reads nothing, and says which seq the client got last, so it can be told where to resume.

Pure asyncio: no web framework, no store; the access service's streams (``streams.py``)
give it a follower of the session's shared feed (``stream_hub``) and their ``send``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar


class Sequenced(Protocol):
    @property
    def seq(self) -> int: ...


E = TypeVar("E", bound=Sequenced)


@dataclass(frozen=True)
class RelayEnd:
    """Why a relay stopped, and the seq of the last event the client was sent."""

    #: "behind": the buffer stayed full too long; "gone": the client left (or a send failed);
    #: "closing": the server is shutting down; "exhausted": the source ended (a live
    #: subscription never does).
    reason: str
    delivered_seq: int


async def relay(
    source: AsyncIterator[E],
    send: Callable[[E], Awaitable[None]],
    *,
    after_seq: int,
    capacity: int,
    stall_seconds: float,
    client_gone: Awaitable[object] | None = None,
    idle_seconds: float | None = None,
    send_idle: Callable[[], Awaitable[None]] | None = None,
    closing: Awaitable[object] | None = None,
) -> RelayEnd:
    """Send every event of ``source`` in order until the client is too far behind, leaves
    (``client_gone`` completes, or ``send`` raises: a send fails once the connection is gone),
    the server shuts down (``closing`` completes) or the source ends. A failing source raises
    its error.

    ``send_idle`` is called after ``idle_seconds`` without an event (a keep-alive that also
    finds dead connections)."""
    if capacity < 1:
        raise ValueError("a client's buffer holds at least one event")
    buffer: asyncio.Queue[E] = asyncio.Queue(maxsize=capacity)
    delivered = after_seq

    async def pump() -> str:
        async for event in source:
            if buffer.full():
                try:
                    async with asyncio.timeout(stall_seconds):
                        await buffer.put(event)
                except TimeoutError:
                    return "behind"
            else:
                buffer.put_nowait(event)
        await buffer.join()  # the source ended: the client gets what was read before we stop
        return "exhausted"

    async def sender() -> str:
        nonlocal delivered
        while True:
            try:
                async with asyncio.timeout(idle_seconds):
                    event = await buffer.get()
            except TimeoutError:
                if send_idle is not None:
                    await send_idle()
                continue
            await send(event)
            delivered = event.seq
            buffer.task_done()

    pumping = asyncio.ensure_future(pump())
    tasks: list[asyncio.Future[Any]] = [pumping, asyncio.ensure_future(sender())]
    if client_gone is not None:
        tasks.append(asyncio.ensure_future(client_gone))
    stopping = asyncio.ensure_future(closing) if closing is not None else None
    if stopping is not None:
        tasks.append(stopping)
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if pumping in done:
        failure = pumping.exception()
        if failure is not None:
            raise failure  # the source failed: not the client's doing
        return RelayEnd(reason=str(pumping.result()), delivered_seq=delivered)
    if stopping is not None and stopping in done:
        return RelayEnd(reason="closing", delivered_seq=delivered)
    return RelayEnd(reason="gone", delivered_seq=delivered)
