"""Hears that a credential changed anywhere (a token revoked, a user disabled, removed or
demoted), so that an API process forgets the Bearer tokens it remembers at once.

Triggers on ``api_tokens`` and ``users`` (migration 0015) send ``NOTIFY chronicle_credentials``
whatever made the change (the CLI, another API process, plain SQL). Each notification, and
each loss or re-making of the listening connection, moves ``generation`` on: a remembered
token is trusted only within the generation it was looked up in, and only while ``live``
(listening now). Notifications are lost while disconnected, so while not live nothing is
trusted without asking the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from app.store import TRANSIENT_ERRORS, Connection

CHANNEL = "chronicle_credentials"

log = logging.getLogger(__name__)


class CredentialWatch:
    """One listening connection of its own, re-made with backoff until closed."""

    def __init__(
        self, connect: Callable[[], Awaitable[Connection]], *, keepalive: float = 5.0
    ) -> None:
        self._connect = connect
        self._keepalive = keepalive
        self._task: asyncio.Task[None] | None = None
        self._live = False
        #: Moves on with every change heard and every connection lost or made.
        self.generation = 0
        self._moved = asyncio.Event()

    @property
    def live(self) -> bool:
        """Listening now: a change made elsewhere would be heard."""
        return self._live

    async def changed(self) -> None:
        """Return when ``generation`` next moves on (a change heard, or the connection lost or
        made): what a live stream waits on to check its credentials again."""
        await self._moved.wait()

    def _move_on(self) -> None:
        self.generation += 1
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="chronicle-credential-watch")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._live = False
        self._move_on()

    def _heard(self, *_: object) -> None:
        self._move_on()

    async def _run(self) -> None:
        backoff = 0.05
        while True:
            connection: Connection | None = None
            try:
                connection = await self._connect()
                lost = asyncio.Event()
                connection.add_termination_listener(lambda _c, lost=lost: lost.set())
                await connection.add_listener(CHANNEL, self._heard)
                self._live = True
                self._move_on()
                backoff = 0.05
                await self._until_lost(connection, lost)
            except Exception as exc:  # whatever it was: nothing is trusted until we listen
                log.warning("credential watch: connection unavailable (%s); retrying", exc)
            finally:
                self._live = False
                self._move_on()
                if connection is not None and not connection.is_closed():
                    connection.terminate()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    async def _until_lost(self, connection: Connection, lost: asyncio.Event) -> None:
        """Return when the connection is gone; a silent one is found by a periodic ping."""
        while not lost.is_set():
            try:
                async with asyncio.timeout(self._keepalive):
                    await lost.wait()
            except TimeoutError:
                try:
                    async with asyncio.timeout(self._keepalive):
                        await connection.execute("SELECT 1")
                except TRANSIENT_ERRORS:  # TimeoutError among them
                    return
