"""Sends each append's NOTIFY right after its commit, on the side.

A transaction that calls NOTIFY holds a database-wide lock from its pre-commit until its
commit record is flushed, so notifying inside the append transaction would let only one
append in the whole cluster commit at a time (no group commit). The store therefore appends
with ``p_notify => false`` and this announcer sends the notifications in a tiny transaction of
their own, which writes no WAL to wait for, over the process's listening connection (idle
otherwise, and reconnected by the notifier), so they never queue behind appends for the pool.
Each append still gets exactly one notification, sent after its data is committed. If the
process dies in between, other processes' subscribers catch up on their fallback poll:
notifications only ever speed delivery up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from app.store.transient import TRANSIENT_ERRORS

log = logging.getLogger(__name__)


class Announcer:
    """Queues this process's append notifications and sends them in batches, in order."""

    def __init__(self, send: Callable[[list[str]], Awaitable[None]]) -> None:
        self._send_batch = send
        self._pending: list[str] = []
        self._ready = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="chronicle-announcer")

    def announce(self, session_id: str, last_seq: int) -> None:
        self._pending.append(f"{session_id}:{last_seq}")
        self._ready.set()

    async def _run(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            await self._send()

    async def _send(self) -> None:
        payloads, self._pending = self._pending, []
        if not payloads:
            return
        try:
            await self._send_batch(payloads)
        except TRANSIENT_ERRORS as exc:
            log.warning(
                "could not send %d notifications (%s); subscribers will poll", len(payloads), exc
            )

    async def close(self) -> None:
        """Send what is still pending, then stop."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        with contextlib.suppress(*TRANSIENT_ERRORS):
            async with asyncio.timeout(2):
                await self._send()
