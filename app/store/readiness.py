"""What the access service's readiness probe asks the database (``GET /health/ready``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.store.event_store import EventStore


async def schema_revision(store: EventStore) -> str | None:
    """The migration the database is at (chronicle_app may read alembic's version table)."""
    revision: str | None = await store.pool.fetchval(
        "SELECT version_num FROM chronicle_schema_version"
    )
    return revision
