"""What the access service's readiness probe asks the database (``GET /health/ready``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.store.transient import REFUSED_FOR_NOW, REFUSED_FOR_NOW_REASONS, refused_for_now

if TYPE_CHECKING:
    from app.store.event_store import EventStore

#: Does the database take a write now? A tiny write that is rolled back proves nothing: an
#: insert fits a page that has room, and nothing reaches the disk before its WAL is flushed.
#: A sort made to spill writes real blocks at once, to a temporary file in the database's own
#: tablespace (``temp_tablespaces`` emptied for it), and fails like an append that must grow a
#: table when that disk is full (53100). About 56 KiB, a few milliseconds, no WAL, no catalog
#: change, nothing left behind. It speaks for the database's default tablespace only: a table
#: moved to a tablespace of its own has its disk unwatched here. A server that takes no
#: writes at all (a standby, ``default_transaction_read_only``) says so in the same query.
WRITE_PROBE_SQL = """
SELECT current_setting('transaction_read_only') = 'on' AS read_only, count(*) AS sorted
FROM (SELECT g FROM generate_series(1, 4000) g ORDER BY g DESC OFFSET 1) s
"""


async def schema_revision(store: EventStore) -> str | None:
    """The migration the database is at (chronicle_app may read alembic's version table)."""
    revision: str | None = await store.pool.fetchval(
        "SELECT version_num FROM chronicle_schema_version"
    )
    return revision


async def write_refusal(store: EventStore) -> str | None:
    """None when the database can write to its disk now; else why not, in plain words."""
    try:
        async with store.pool.acquire() as connection, connection.transaction():
            await connection.execute("SET LOCAL work_mem = '64kB'; SET LOCAL temp_tablespaces = ''")
            row = await connection.fetchrow(WRITE_PROBE_SQL)
    except REFUSED_FOR_NOW as exc:
        refusal = refused_for_now(exc)
        assert refusal is not None
        return refusal.reason
    if row is not None and row["read_only"]:
        return REFUSED_FOR_NOW_REASONS["25006"]
    return None
