"""Which PostgreSQL Chronicle uses: the configured URL, or the embedded server (kept running
under `chronicle serve` and `chronicle worker`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from app.store.config import DatabaseConfig
from app.store.embedded import EmbeddedPostgres
from app.store.embedded.supervisor import supervised
from app.store.migrate import migrations_dir

STAMP_NAME = "chronicle-schema.stamp"


def _migrations_fingerprint() -> str:
    """The names of the shipped migrations: a new one means the embedded server migrates."""
    return "\n".join(sorted(p.name for p in (migrations_dir() / "versions").glob("*.py")))


def ensure_database(config: DatabaseConfig) -> str:
    """The application's database URL; with none configured, the embedded server's.

    A configured server is used as it is: Chronicle never starts its own then, and never
    migrates it behind the operator's back (`chronicle db migrate` does that). The embedded
    server is ours: it is started when needed and migrated (as its superuser) when the
    migrations changed; a stamp in its data directory makes the common case skip alembic's
    start-up cost. The application itself connects as ``chronicle_app``.
    """
    if config.database_url:
        return config.database_url
    server = EmbeddedPostgres(config.data_dir)
    urls = server.ensure_running()
    stamp = server.pgdata / STAMP_NAME
    fingerprint = _migrations_fingerprint()
    if not stamp.exists() or stamp.read_text() != fingerprint:
        from app.store import migrate

        migrate.upgrade(urls.admin)
        stamp.write_text(fingerprint)
    return urls.app


def admin_database_url(config: DatabaseConfig) -> str:
    """The URL for migrations, `chronicle db` and what only the owner may write (an admin, an
    admin's token): the owner's URL if given, else the configured one (run those commands with
    the owner's URL there), else the embedded server's superuser, started if needed."""
    if config.owner_database_url:
        return config.owner_database_url
    if config.database_url:
        return config.database_url
    return EmbeddedPostgres(config.data_dir).ensure_running().admin


def forget_migrations(config: DatabaseConfig) -> None:
    """After a manual downgrade of the embedded database: set it up and migrate it again on
    the next start (a downgrade to base drops the chronicle_app role)."""
    if not config.database_url:
        server = EmbeddedPostgres(config.data_dir)
        (server.pgdata / STAMP_NAME).unlink(missing_ok=True)
        server.provision_again()


async def ensure_database_async(config: DatabaseConfig) -> str:
    return await asyncio.to_thread(ensure_database, config)


@contextlib.asynccontextmanager
async def kept_running(config: DatabaseConfig) -> AsyncIterator[None]:
    """While the block runs (a long-lived process), the embedded server is started again
    whenever it dies; a configured server is the operator's, never ours to start."""
    if config.database_url:
        yield
        return
    async with supervised(EmbeddedPostgres(config.data_dir)):
        yield
