"""Removed content out of the database's own files: what ``chronicle db scrub`` does after a
redaction or an erasure (docs/erasure.md, "What is left behind").

A redaction replaces a row's payload and an erasure deletes rows, but PostgreSQL keeps the old
row versions in the table's pages until a vacuum, and even a vacuum only marks their space
free: the bytes stay in the file until something overwrites them (only the empty pages at a
table's end are cut off). Index pages keep the old keys the same way (a title's words in
``session_state``'s text index, a person's name in ``users``'). So:

- ``scrub_tables(full=False)``: VACUUM of the tables content leaves (online, no lock that stops
  writes) and a concurrent rebuild of the indexes that hold copied text: the old versions are
  gone from every reader and from the indexes, though free space may still hold bytes;
- ``scrub_tables(full=True)``: VACUUM FULL of those tables, which writes each one (and its TOAST
  table and indexes) anew and drops the old files: nothing removed is left in the files the
  database uses. It holds an exclusive lock on each table while it is rewritten (appends to
  that month of events wait): run it in a quiet hour.

Neither reaches the write-ahead log, a standby's copy until it replays, backups, or the blocks
a file system freed (docs/erasure.md). Only the tables' owner may.
"""

from __future__ import annotations

from collections.abc import Callable

import asyncpg
from pydantic import BaseModel

from app.store.errors import StoreError
from app.store.partitions import connected

#: The tables content is removed from (a redaction, an erasure, a person's), events last: it
#: is the largest.
TABLES = (
    "blobs",
    "llm_messages",
    "sessions",
    "session_state",
    "session_leases",
    "event_ids",
    "otel_spans",
    "users",
    "api_tokens",
    "browser_logins",
    "login_codes",
    "events",
)
OWNER_SQL = (
    "SELECT rolsuper OR pg_has_role(current_user, 'chronicle_owner', 'MEMBER') "
    "FROM pg_roles WHERE rolname = current_user"
)
#: Tables whose indexes hold copied text; rebuilt concurrently by a plain scrub.
TEXT_INDEXED = ("session_state", "users")


class ScrubReport(BaseModel):
    full: bool
    tables: list[str]
    reindexed: list[str]


async def scrub_tables(
    url: str, *, full: bool, progress: Callable[[str], None] = lambda _text: None
) -> ScrubReport:
    """Vacuum (``full``: rewrite) the tables content leaves, through the owner's ``url``."""
    reindexed: list[str] = []
    async with connected(url) as connection:
        if not await connection.fetchval(OWNER_SQL):
            raise StoreError(
                "only the tables' owner may scrub them (a VACUUM by anyone else skips them): "
                "run it with the owner's database URL (CHRONICLE_OWNER_DATABASE_URL)"
            )
        try:
            for table in TABLES:
                progress(f"{'rewriting' if full else 'vacuuming'} {table}")
                await connection.execute(f"VACUUM {'(FULL) ' if full else ''}{table}")
            if not full:
                for table in TEXT_INDEXED:
                    progress(f"rebuilding the indexes of {table}")
                    await connection.execute(f"REINDEX TABLE CONCURRENTLY {table}")
                    reindexed.append(table)
        except asyncpg.InsufficientPrivilegeError as exc:
            raise StoreError(
                f"only the tables' owner may scrub them ({exc}): run it with the owner's "
                "database URL (CHRONICLE_OWNER_DATABASE_URL)"
            ) from None
    return ScrubReport(full=full, tables=list(TABLES), reindexed=reindexed)
