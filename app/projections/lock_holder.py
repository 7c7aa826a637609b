"""What a projection runner and the live OTLP exporter share: one named job over the log,
done by one process at a time.

A ``LockHolder`` takes its row's lock (``ProjectionConnection.try_lock``) on a connection of
its own and works while it holds it (``_hold``, the subclass's); other processes stand by and
try again every ``standby_interval``, taking over when the holder ends (its connection closes,
however the process died). A holder whose connection or database goes away, or whose database
refuses for now (its disk full: ``app.store.transient``), lets go and starts over with a
growing pause; a newer version's row makes it stand by for good; any other error stops it,
said in ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod

from app.projections.sql.projection_store import NewerVersionError, ProjectionConnection
from app.store import (
    DATABASE_GONE_ERRORS,
    REFUSED_FOR_NOW,
    TRANSIENT_ERRORS,
    EventStore,
    Position,
)

#: The database or the holder's connection went away, or the database refuses for now (a full
#: disk would refuse the same batch again until space is freed): let go, try again later.
LET_GO: tuple[type[BaseException], ...] = (
    *TRANSIENT_ERRORS,
    *DATABASE_GONE_ERRORS,
    *REFUSED_FOR_NOW,
)
#: Longest pause before trying again after the database went away.
MAX_BACKOFF = 10.0


class LockHolder(ABC):
    """Works while holding its lock, stands by otherwise; ``run`` until ``stop()``."""

    #: What its log lines begin with, and what another holder is doing meanwhile.
    describe: str
    standing_by: str

    def __init__(self, store: EventStore, standby_interval: float) -> None:
        self.store = store
        self._standby_interval = standby_interval
        self._stop = asyncio.Event()
        self.state = "starting"
        #: The position worked up to, while working.
        self.position: Position | None = None
        #: Set whenever it is caught up with the head of the log.
        self.caught_up = asyncio.Event()
        #: Set when ``run`` returns, whether stopped or failed (``error`` then says why).
        self.ended = asyncio.Event()
        self.error: BaseException | None = None
        #: Its lines go to its own module's logger (``app.projections.runner`` ...), which the
        #: commands quieten or show by that name.
        self._log = logging.getLogger(type(self).__module__)

    @property
    @abstractmethod
    def name(self) -> str:
        """Its row in ``projections``, and the name of its lock."""

    @abstractmethod
    async def _hold(self, connection: ProjectionConnection) -> None:
        """Holding the lock: work until stopped."""

    def stop(self) -> None:
        """Ask it to finish what is left (within the drain timeout) and let go."""
        self._stop.set()

    async def run(self) -> None:
        """Run until ``stop()``: work while holding the lock, stand by otherwise."""
        backoff = 0.1
        try:
            while not self._stop.is_set():
                try:
                    await self._run_once()
                    backoff = 0.1
                except NewerVersionError as exc:
                    self._log.warning("%s; this process stands by", exc)
                    self.state = "standby"
                    await self._stop.wait()
                except LET_GO as exc:
                    self._log.warning("%s: %s; trying again", self.describe, exc)
                    self.state = "standby"
                    await self._pause(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF)
        except Exception as exc:
            # what failed would fail again: stop, and say why
            self._log.error("%s stopped: %s", self.describe, exc)
            self._log.debug("%s stopped", self.describe, exc_info=exc)
            self.error = exc
            raise
        finally:
            self.state = "stopped"
            self.ended.set()

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stop.wait()

    async def _run_once(self) -> None:
        async with await ProjectionConnection.dedicated(self.store) as connection:
            while not await connection.try_lock(self.name):
                if self.state != "standby":
                    self._log.info("%s: %s; standing by", self.describe, self.standing_by)
                self.state = "standby"
                await self._pause(self._standby_interval)
                if self._stop.is_set():
                    return
            await self._hold(connection)
