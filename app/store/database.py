"""Which PostgreSQL Chronicle uses: the configured URL, or the embedded server."""

from __future__ import annotations

import asyncio

from app.config import Settings
from app.store import migrate
from app.store.embedded import EmbeddedPostgres


def ensure_database(settings: Settings) -> str:
    """The database URL to use; with no URL configured, start and migrate the embedded one.

    A configured server is used as it is: Chronicle never starts its own then, and never
    migrates it behind the operator's back (`chronicle db migrate` does that).
    """
    if settings.database_url:
        return settings.database_url
    url = EmbeddedPostgres(settings.data_dir).start()
    if migrate.current_revision(url) != migrate.head_revision():
        migrate.upgrade(url)
    return url


async def ensure_database_async(settings: Settings) -> str:
    return await asyncio.to_thread(ensure_database, settings)
