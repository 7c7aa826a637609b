"""The runner: keeps one projection current, in one process at a time.

A runner takes the projection's lock on a connection of its own (``ProjectionConnection``)
and, while it holds it: rebuilds the tables if an older version of the projection built them,
applies the backlog page by page, then follows ``subscribe_all`` and applies what arrives in
batches (every event already read ahead goes into the same transaction). Each batch commits
with its position, so a runner killed at any point resumes exactly after the last committed
batch.

Runners of the same projection in other processes stand by and take over when its holder
ends; a runner whose database goes away lets go and starts over: the lifecycle it shares
with the live OTLP exporter (``lock_holder.LockHolder``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from app.projections.base import Projection
from app.projections.catch_up import Applied, catch_up, rebuild
from app.projections.config import OtlpExportConfig, ProjectionsConfig
from app.projections.lock_holder import LockHolder
from app.projections.partition_keeper import keep_partitions
from app.projections.rollup_keeper import keep_rollups
from app.projections.sql.projection_store import (
    NewerVersionError,
    PositionMovedError,
    ProjectionConnection,
    runner_identity,
)
from app.store import (
    EventStore,
    GlobalSubscription,
    Position,
    RecordedEvent,
)

if TYPE_CHECKING:
    from app.projections.otlp.exporter import OtlpExporter

log = logging.getLogger(__name__)

#: Upkeep run beside the runners until they stop (given the event that says stop).
Upkeep = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


class ProjectionRunner(LockHolder):
    """Applies one projection while it holds its lock; stands by while another runner does.
    States: ``starting``, ``standby``, ``rebuilding``, ``applying``, ``stopped``."""

    standing_by = "another process applies it"

    def __init__(
        self,
        store: EventStore,
        projection: Projection,
        config: ProjectionsConfig | None = None,
        *,
        applied: Applied | None = None,
    ) -> None:
        self.config = config or ProjectionsConfig()
        super().__init__(store, self.config.standby_interval)
        self.projection = projection
        self.describe = f"projection {projection.name}"
        self._applied = applied
        #: Set when a rebuild announces it swapped this projection's tables in.
        self._moved = asyncio.Event()

    @property
    def name(self) -> str:
        return self.projection.name

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
    upkeep: Sequence[Upkeep] = (),
) -> AsyncIterator[list[ProjectionRunner | OtlpExporter]]:
    """Run a runner per projection beside the block, and the live OTLP exporter when
    ``otlp`` names a collector; at its end they apply (send) what is left (within
    ``drain_timeout``) and stop. Each of ``upkeep`` (the retention policies' rounds, which
    the caller above the sessions wires in) runs beside them until the block ends."""
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
    stop_keeping = asyncio.Event()
    keeper = asyncio.create_task(
        keep_partitions(
            store,
            interval=config.partitions_interval,
            months_ahead=config.partitions_ahead,
            stop=stop_keeping,
        ),
        name="chronicle-event-partitions",
    )
    rollups = asyncio.create_task(
        keep_rollups(store, interval=config.rollups_interval, stop=stop_keeping),
        name="chronicle-usage-rollups",
    )
    kept = [
        asyncio.create_task(keep(stop_keeping), name=f"chronicle-upkeep-{number}")
        for number, keep in enumerate(upkeep)
    ]
    try:
        yield runners
    finally:
        stop_keeping.set()
        for runner in runners:
            runner.stop()
        await asyncio.gather(keeper, rollups, *kept, return_exceptions=True)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=config.drain_timeout + 1.0)
            for task in late:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
