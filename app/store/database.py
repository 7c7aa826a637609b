"""Which PostgreSQL Chronicle uses: the configured URL, or the embedded server."""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.config import Settings
from app.store.embedded import EmbeddedPostgres

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations" / "versions"
STAMP_NAME = "chronicle-schema.stamp"


def _migrations_fingerprint() -> str:
    return "\n".join(sorted(p.name for p in MIGRATIONS.glob("*.py")))


def ensure_database(settings: Settings) -> str:
    """The database URL to use; with no URL configured, start and migrate the embedded one.

    A configured server is used as it is: Chronicle never starts its own then, and never
    migrates it behind the operator's back (`chronicle db migrate` does that). The embedded
    server is ours: it is started when needed and migrated when the migrations changed (a
    stamp in its data directory makes the common case skip alembic's start-up cost).
    """
    if settings.database_url:
        return settings.database_url
    server = EmbeddedPostgres(settings.data_dir)
    status = server.status()
    url = status.url if status.running and status.url else server.start()
    stamp = server.pgdata / STAMP_NAME
    fingerprint = _migrations_fingerprint()
    if not stamp.exists() or stamp.read_text() != fingerprint:
        from app.store import migrate

        migrate.upgrade(url)
        stamp.write_text(fingerprint)
    return url


async def ensure_database_async(settings: Settings) -> str:
    return await asyncio.to_thread(ensure_database, settings)
