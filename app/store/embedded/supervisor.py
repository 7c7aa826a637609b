"""Keeping the embedded PostgreSQL running under a long-lived process (`chronicle serve`,
`chronicle worker`).

When its postmaster dies (kill -9, the OOM killer, a crash) nobody else would start it again
until some other command needed the database, and until then every request would find the
database gone. The supervisor starts it again; the pools and the listening connection
reconnect by themselves once it answers (same socket, same URLs: ``sockets``).

Several processes share one data directory and all see the death: the decision is taken under
the data directory's lock (``EmbeddedPostgres.start_if_died``), so exactly one starts it and
the others find it running. A start that fails is retried with backoff. A server stopped on
purpose (`chronicle db stop`) is left stopped, and watched again once something starts it.
Waiting costs nothing: the postmaster's end is awaited on a pidfd, and the event loop never
blocks (the pid file is read and the server started in a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator

from app.store.embedded.postmaster import read_postmaster
from app.store.embedded.server import EmbeddedPostgres, Revival

log = logging.getLogger(__name__)

#: Seconds between two looks at the pid file when no pidfd tells of the postmaster's end (and
#: the longest a pidfd is trusted alone: a look also catches a restart by another process).
CHECK_INTERVAL = 5.0
#: Seconds between looks while the server is stopped on purpose, or where there is no pidfd.
STOPPED_INTERVAL = 1.0
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0


class PostmasterSupervisor:
    """Starts the embedded server of one data directory again each time its postmaster dies."""

    def __init__(self, server: EmbeddedPostgres) -> None:
        self.server = server
        self._last_pid: int | None = None
        self._backoff = FIRST_BACKOFF
        self._told_stopped = False

    async def run(self) -> None:
        """Watch until cancelled; a failure is logged and tried again after a backoff."""
        while True:
            try:
                await self._step()
            except Exception as exc:  # logged and retried: the supervisor must outlive it
                log.warning(
                    "the embedded PostgreSQL in %s is down: %s; it did not start: %s; "
                    "trying again in %.0f s",
                    self.server.pgdata,
                    self._reason(),
                    exc,
                    self._backoff,
                )
                await asyncio.sleep(self._backoff)
                self._backoff = min(self._backoff * 2, MAX_BACKOFF)

    async def _step(self) -> None:
        """Wait for the running postmaster to end, or start a dead one again."""
        pgdata = self.server.pgdata
        running = await asyncio.to_thread(read_postmaster, pgdata)
        if running is not None:
            self._last_pid, self._backoff, self._told_stopped = running.pid, FIRST_BACKOFF, False
            await _ended(running.pid, within=CHECK_INTERVAL)
            return
        revival = await asyncio.to_thread(self.server.start_if_died)
        if revival is Revival.STOPPED:
            if not self._told_stopped:
                log.warning(
                    "the embedded PostgreSQL in %s was stopped (`chronicle db stop`); "
                    "left stopped until a command starts it",
                    pgdata,
                )
                self._told_stopped = True
            await asyncio.sleep(STOPPED_INTERVAL)
            return
        now = await asyncio.to_thread(read_postmaster, pgdata)
        pid = now.pid if now is not None else None
        if revival is Revival.STARTED:
            log.warning(
                "the embedded PostgreSQL in %s died: %s; started it again (pid %s)",
                pgdata,
                self._reason(),
                pid,
            )
        else:
            log.info("the embedded PostgreSQL in %s runs again (pid %s)", pgdata, pid)

    def _reason(self) -> str:
        pid = f" (pid {self._last_pid})" if self._last_pid is not None else ""
        return f"its postmaster{pid} ended without shutting down"


async def _ended(pid: int, *, within: float) -> None:
    """Return once process ``pid`` has ended (read on its pidfd), or after ``within`` seconds
    (``STOPPED_INTERVAL`` where there is no pidfd)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd here: look again soon
        await asyncio.sleep(STOPPED_INTERVAL)
        return
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended, within)
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


@contextlib.asynccontextmanager
async def supervised(server: EmbeddedPostgres) -> AsyncIterator[PostmasterSupervisor]:
    """``server`` started again whenever it dies, while the block runs."""
    supervisor = PostmasterSupervisor(server)
    watching = asyncio.create_task(supervisor.run(), name=f"supervise {server.pgdata}")
    try:
        yield supervisor
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
