"""A warm pool: sandboxes started ahead of time, so a new session is ready at once.

A pooled sandbox is made by a factory before its session exists, so it brings its own
workspace; a session that must use a particular directory starts its sandbox cold instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from app.runtime.protocol import Runtime

log = logging.getLogger(__name__)


class SandboxPool:
    def __init__(self, factory: Callable[[], Runtime], size: int, *, ready_timeout: float = 30.0):
        self._factory = factory
        self.size = size
        self._ready_timeout = ready_timeout
        self._ready: asyncio.Queue[Runtime] = asyncio.Queue()
        self._filling: set[asyncio.Task[None]] = set()
        self._closed = False

    async def _make(self) -> Runtime:
        runtime = self._factory()
        try:
            await runtime.start()
            await runtime.wait_ready(self._ready_timeout)
        except BaseException:
            await runtime.close()
            raise
        return runtime

    async def _add_one(self) -> None:
        try:
            runtime = await self._make()
        except Exception as exc:  # a failed warm-up must not take the service down
            log.warning("could not warm a sandbox: %s", exc)
            return
        if self._closed:
            await runtime.close()
        else:
            self._ready.put_nowait(runtime)

    def _refill(self) -> None:
        while not self._closed and self._ready.qsize() + len(self._filling) < self.size:
            task = asyncio.create_task(self._add_one(), name="chronicle-pool-fill")
            self._filling.add(task)
            task.add_done_callback(self._filling.discard)

    async def start(self) -> None:
        """Start filling the pool and wait until it is full (or its sandboxes failed)."""
        self._refill()
        if self._filling:
            await asyncio.gather(*self._filling, return_exceptions=True)

    @property
    def available(self) -> int:
        return self._ready.qsize()

    async def acquire(self) -> Runtime:
        """A started, ready sandbox: from the pool when one is warm, else started now."""
        try:
            runtime = self._ready.get_nowait()
        except asyncio.QueueEmpty:
            runtime = await self._make()
        self._refill()
        return runtime

    async def close(self) -> None:
        self._closed = True
        for task in list(self._filling):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        while not self._ready.empty():
            await self._ready.get_nowait().close()
