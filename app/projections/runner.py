"""The runner: keeps one projection current, in one process at a time.

A runner takes the projection's lock on a connection of its own (``ProjectionConnection``)
and, while it holds it: rebuilds the tables if an older version of the projection built them,
applies the backlog page by page, then follows ``subscribe_all`` and applies what arrives in
batches (every event already read ahead goes into the same transaction). Each batch commits
with its position, so a runner killed at any point resumes exactly after the last committed
batch.

Runners of the same projection in other processes stand by: they try the lock every
``standby_interval`` and take over when its holder ends (its connection closes, however the
process died). A runner whose connection or database goes away, or whose database refuses
for now (its disk full: ``app.store.transient``), lets go and starts over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from app.projections.base import Projection
from app.projections.catch_up import Applied, catch_up, rebuild
from app.projections.config import OtlpExportConfig, ProjectionsConfig
from app.projections.sql.projection_store import (
    NewerVersionError,
    PositionMovedError,
    ProjectionConnection,
    runner_identity,
)
from app.store import (
    DATABASE_GONE_ERRORS,
    REFUSED_FOR_NOW,
    TRANSIENT_ERRORS,
    EventStore,
    GlobalSubscription,
    Position,
    RecordedEvent,
)

if TYPE_CHECKING:
    from app.projections.otlp.exporter import OtlpExporter

log = logging.getLogger(__name__)

RunnerState = Literal["starting", "standby", "rebuilding", "applying", "stopped"]
#: The database or the runner's connection went away, or the database refuses for now (a full
#: disk would refuse the same batch again until space is freed): let go, try again later.
LET_GO: tuple[type[BaseException], ...] = (
    *TRANSIENT_ERRORS,
    *DATABASE_GONE_ERRORS,
    *REFUSED_FOR_NOW,
)
#: Longest pause before trying again after the database went away.
MAX_BACKOFF = 10.0


class ProjectionRunner:
    """Applies one projection while it holds its lock; stands by while another runner does."""

    def __init__(
        self,
        store: EventStore,
        projection: Projection,
        config: ProjectionsConfig | None = None,
        *,
        applied: Applied | None = None,
    ) -> None:
        self.store = store
        self.projection = projection
        self.config = config or ProjectionsConfig()
        self._applied = applied
        self._stop = asyncio.Event()
        #: Set when a rebuild announces it swapped this projection's tables in.
        self._moved = asyncio.Event()
        self.state: RunnerState = "starting"
        #: The position applied up to, while applying.
        self.position: Position | None = None
        #: Set whenever the runner is caught up with the head of the log.
        self.caught_up = asyncio.Event()
        #: Set when ``run`` returns, whether stopped or failed (``error`` then says why).
        self.ended = asyncio.Event()
        self.error: BaseException | None = None

    @property
    def name(self) -> str:
        return self.projection.name

    def stop(self) -> None:
        """Ask the runner to apply what is left (within ``drain_timeout``) and let go."""
        self._stop.set()

    async def run(self) -> None:
        """Run until ``stop()``: apply while holding the lock, stand by otherwise."""
        backoff = 0.1
        try:
            while not self._stop.is_set():
                try:
                    await self._run_once()
                    backoff = 0.1
                except NewerVersionError as exc:
                    log.warning("%s; this process stands by", exc)
                    self.state = "standby"
                    await self._stop.wait()
                except LET_GO as exc:
                    log.warning("projection %s: %s; trying again", self.name, exc)
                    self.state = "standby"
                    await self._pause(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF)
        except Exception as exc:
            # A fold that fails on an event would fail on it again: stop, and say which.
            log.error("projection %s stopped: %s", self.name, exc)
            log.debug("projection %s stopped", self.name, exc_info=exc)
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
                    log.info("projection %s: another process applies it; standing by", self.name)
                self.state = "standby"
                await self._pause(self.config.standby_interval)
                if self._stop.is_set():
                    return
            await self._hold(connection)

    async def _hold(self, connection: ProjectionConnection) -> None:
        """Holding the lock: start where the tables are, then follow the log until stopped."""
        projection = self.projection
        checkpoint = await connection.register(projection.name, projection.version)
        await connection.set_runner(projection.name, runner_identity())
        if checkpoint.version > projection.version:
            raise NewerVersionError(projection.name, checkpoint.version, projection.version)
        position = checkpoint.position
        # a rebuild elsewhere swaps its tables in behind this runner: told at once, it goes
        # on from the rebuilt position even when no new event would have shown it
        await connection.on_moved(projection.name, self._moved.set)
        if checkpoint.version < projection.version:
            log.info(
                "projection %s: built by version %d, this is %d: rebuilding",
                projection.name,
                checkpoint.version,
                projection.version,
            )
            self.state = "rebuilding"
            position = await rebuild(
                self.store, connection, projection, batch_size=self.config.batch_size
            )
        self.state = "applying"
        log.info("projection %s: applying from %s", projection.name, position)
        while True:
            try:
                position = await self._catch_up(connection, position)
                if self._stop.is_set():
                    return
                await self._follow(connection, position)
                with contextlib.suppress(TimeoutError):  # stopped: what is left, briefly
                    async with asyncio.timeout(self.config.drain_timeout):
                        await self._catch_up(connection, self.position or position)
                return
            except PositionMovedError as moved:
                log.info("projection %s: rebuilt elsewhere; going on from %s", self.name, moved)
                position = moved.stored
                # what it had applied past there is to be applied again: not caught up
                self.position = position
                self.caught_up.clear()

    async def _catch_up(self, connection: ProjectionConnection, position: Position) -> Position:
        self.position = await catch_up(
            self.store,
            connection,
            self.projection,
            position,
            batch_size=self.config.batch_size,
            applied=self._done,
        )
        self.caught_up.set()
        return self.position

    async def _follow(self, connection: ProjectionConnection, position: Position) -> None:
        """Apply what ``subscribe_all`` delivers, a batch at a time, until stopped (or a
        rebuild moved the stored position: ``PositionMovedError``)."""
        stopping: asyncio.Future[Any] = asyncio.ensure_future(self._stop.wait())
        try:
            async with self.store.subscribe_all(start=position, auto_checkpoint=False) as events:
                while (batch := await self._next_batch(events, stopping)) is not None:
                    if not batch:  # a rebuild was announced
                        stored = (await connection.checkpoint(self.name)).position
                        if stored != position:
                            raise PositionMovedError(self.name, stored)
                        continue
                    self.caught_up.clear()
                    position = await connection.apply(self.projection, batch, position)
                    self.position = position
                    self._done(batch)
                    if not events.buffered():
                        self.caught_up.set()
        finally:
            stopping.cancel()

    async def _next_batch(
        self, events: GlobalSubscription, stopping: asyncio.Future[Any]
    ) -> list[RecordedEvent] | None:
        """The next event and every one already read after it (up to a batch); empty when a
        rebuild was announced meanwhile; None once stopped (a cancelled ``__anext__`` loses
        nothing: the subscription's promise)."""
        following: asyncio.Future[RecordedEvent] = asyncio.ensure_future(anext(events))
        moved: asyncio.Future[Any] = asyncio.ensure_future(self._moved.wait())
        waiting: set[asyncio.Future[Any]] = {following, stopping, moved}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            moved.cancel()
        if not following.done():
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
            if self._moved.is_set() and not stopping.done():
                self._moved.clear()
                return []  # look at the stored position (``_follow``)
            return None
        batch = [following.result()]
        while len(batch) < self.config.batch_size and events.buffered():
            batch.append(await anext(events))
        return batch

    def _done(self, batch: Sequence[RecordedEvent]) -> None:
        log.info(
            "projection %s: applied %d events, global positions %d..%d",
            self.name,
            len(batch),
            batch[0].global_position,
            batch[-1].global_position,
        )
        if self._applied is not None:
            self._applied(batch)


@contextlib.asynccontextmanager
async def running_projections(
    store: EventStore,
    projections: Sequence[Projection],
    config: ProjectionsConfig | None = None,
    *,
    applied: Applied | None = None,
    otlp: OtlpExportConfig | None = None,
) -> AsyncIterator[list[ProjectionRunner | OtlpExporter]]:
    """Run a runner per projection beside the block, and the live OTLP exporter when
    ``otlp`` names a collector; at its end they apply (send) what is left (within
    ``drain_timeout``) and stop."""
    config = config or ProjectionsConfig()
    runners: list[ProjectionRunner | OtlpExporter] = [
        ProjectionRunner(store, p, config, applied=applied) for p in projections
    ]
    if otlp is not None and otlp.url is not None:
        from app.projections.otlp.exporter import OtlpExporter

        runners.append(OtlpExporter(store, otlp, config))
    tasks = [
        asyncio.create_task(runner.run(), name=f"chronicle-projection-{runner.name}")
        for runner in runners
    ]
    try:
        yield runners
    finally:
        for runner in runners:
            runner.stop()
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=config.drain_timeout + 1.0)
            for task in late:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
