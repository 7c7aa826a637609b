"""The projections kept current beside a command that runs sessions (`run`, `resume`, `fork`,
`worker`), and the live OTLP exporter when ``otlp_export_url`` is set, unless
``projections_inline`` is off (then a `chronicle projections run` process keeps them). Where
another runner is live, this one stands by; at the end it applies what the command wrote
(``drain_timeout``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from app.config import Settings
from app.store import EventStore


@contextlib.asynccontextmanager
async def inline_projections(store: EventStore, settings: Settings) -> AsyncIterator[None]:
    config = settings.projections
    if not config.inline:
        yield
        return
    from app.projections import all_projections, running_projections
    from app.sessions.retention import retention_upkeep

    async with running_projections(
        store,
        all_projections(),
        config,
        otlp=settings.otlp_export,
        upkeep=retention_upkeep(settings),
    ):
        yield
