"""Reading a projection without a live runner: bring it up to date first.

``chronicle sessions`` right after ``chronicle run`` must list the run as it ended, with no
server running. So a reader takes the projection's lock itself for a moment: if it gets it,
no runner is live, and it applies what is behind (rebuilding first if an older version built
the tables) before it reads. If it does not, a live runner keeps the tables current and the
reader reads them as they are.
"""

from __future__ import annotations

import logging

from app.projections.base import Projection
from app.projections.catch_up import catch_up, rebuild
from app.projections.config import ProjectionsConfig
from app.projections.sql.projection_store import ProjectionConnection, is_current
from app.store import EventStore

log = logging.getLogger(__name__)


async def bring_up_to_date(
    store: EventStore, projection: Projection, config: ProjectionsConfig | None = None
) -> bool:
    """Make the projection current unless a runner is live; whether it is current now (False:
    a live runner is applying what is behind, or newer code built the tables, which are then
    left as they are). A projection that is current costs one query and takes no lock."""
    config = config or ProjectionsConfig()
    if await is_current(store, projection.name, projection.version):
        return True  # nothing to apply: no lock needed to read what is there
    async with await ProjectionConnection.pooled(store) as connection:
        if not await connection.try_lock(projection.name):
            return False
        checkpoint = await connection.register(projection.name, projection.version)
        if checkpoint.version > projection.version:
            log.warning(
                "projection %s was built by a newer Chronicle (version %d); read as it is",
                projection.name,
                checkpoint.version,
            )
            return False
        position = checkpoint.position
        if checkpoint.version < projection.version:
            position = await rebuild(store, connection, projection, batch_size=config.batch_size)
        if await connection.anything_after(position):
            await catch_up(store, connection, projection, position, batch_size=config.batch_size)
        return True
