"""The SQL of erasure and retention: which sessions a policy's filters (owner, tag,
evaluation run) name, which run, which a user owns, which an archive took, and the lock that
keeps one retention round at a time per database."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from app.store import claimed_sql

if TYPE_CHECKING:
    from app.store import EventStore

MATCHING_SQL = """
SELECT s.id FROM sessions s
WHERE s.id = ANY($1::uuid[]) AND s.erased_at IS NULL
  AND (cardinality($2::text[]) = 0 OR EXISTS (
        SELECT 1 FROM session_owners o JOIN users u ON u.id = o.user_id
        WHERE o.session_id = s.id AND u.name = ANY($2::text[])))
  AND (cardinality($3::text[]) = 0 OR EXISTS (
        SELECT 1 FROM annotations a WHERE a.session_id = s.id AND a.tags && $3::text[]))
  AND (cardinality($4::text[]) = 0 OR EXISTS (
        SELECT 1 FROM events e
        WHERE e.session_id = s.id AND e.seq = 1 AND e.kind = 'session.created'
          AND e.payload -> 'config' ? 'evaluation_run'
          AND ('*' = ANY($4::text[])
               OR e.payload -> 'config' ->> 'evaluation_run' = ANY($4::text[]))))
ORDER BY s.created_at, s.id
"""
OWNED_SQL = """
SELECT o.session_id FROM session_owners o JOIN sessions s ON s.id = o.session_id
WHERE o.user_id = $1 AND s.erased_at IS NULL ORDER BY s.created_at, s.id
"""

RUNNING_SQL = f"""
SELECT s.id FROM sessions s
WHERE s.id = ANY($1::uuid[])
  AND (EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = s.id) OR {claimed_sql("s.id")})
"""


async def running(store: EventStore, sessions: Sequence[UUID]) -> set[UUID]:
    """Those of ``sessions`` a process runs, or a worker was asked to run."""
    return {row["id"] for row in await store.pool.fetch(RUNNING_SQL, list(sessions))}


async def matching(
    store: EventStore,
    sessions: Sequence[UUID],
    *,
    users: Sequence[str],
    tags: Sequence[str],
    evaluation_runs: Sequence[str],
) -> list[UUID]:
    """Those of ``sessions``, not erased, that every non-empty filter names."""
    rows = await store.pool.fetch(
        MATCHING_SQL, list(sessions), list(users), list(tags), list(evaluation_runs)
    )
    return [row["id"] for row in rows]


async def owned_by(store: EventStore, user_id: UUID) -> list[UUID]:
    """The sessions a user created that are not erased yet, oldest first."""
    return [row["session_id"] for row in await store.pool.fetch(OWNED_SQL, user_id)]


ARCHIVED_IN_SQL = "SELECT id FROM sessions WHERE id = ANY($1::uuid[]) AND archived_to = $2"
#: One retention round at a time per database (a session-level advisory lock's keys).
ROUND_LOCK = (1129, 29)
TRY_LOCK_SQL = "SELECT pg_try_advisory_lock($1, $2)"
UNLOCK_SQL = "SELECT pg_advisory_unlock($1, $2)"


async def archived_in(store: EventStore, sessions: Sequence[UUID], directory: Path) -> set[UUID]:
    """Those of ``sessions`` whose row says they are archived in ``directory``."""
    rows = await store.pool.fetch(ARCHIVED_IN_SQL, list(sessions), str(directory))
    return {row["id"] for row in rows}


@contextlib.asynccontextmanager
async def retention_round(store: EventStore) -> AsyncIterator[bool]:
    """Whether this process holds the round (held for the block); False: another does."""
    async with store.pool.acquire() as connection:
        held = bool(await connection.fetchval(TRY_LOCK_SQL, *ROUND_LOCK))
        try:
            yield held
        finally:
            if held:
                await connection.fetchval(UNLOCK_SQL, *ROUND_LOCK)


ERASE_USER_SQL = "SELECT chronicle_erase_user($1::uuid, $2::text)"
#: The platform log's records that hold a name as one of their strings (any field).
NAMED_IN_LOG_SQL = """
SELECT seq, kind, payload ->> 'actor' AS actor FROM events
WHERE session_id = $1 AND kind LIKE 'audit.%' AND strpos(payload::text, to_json($2::text)::text) > 0
ORDER BY seq
"""
#: Events of any other session a person sent or annotated (the envelope's ``user``).
SENT_BY_SQL = """
SELECT session_id, seq FROM events
WHERE payload ->> 'user' = $1 AND session_id <> $2 ORDER BY session_id, seq
"""


async def erase_user_row(store: EventStore, user_id: UUID, new_name: str) -> str:
    """The user's personal data out of the access tables (``chronicle_erase_user``); the name
    it had."""
    return str(await store.pool.fetchval(ERASE_USER_SQL, user_id, new_name))


async def named_in_log(
    store: EventStore, log_id: UUID, name: str
) -> list[tuple[int, str, str | None]]:
    """(seq, kind, actor) of each platform log record that holds ``name`` as a string."""
    rows = await store.pool.fetch(NAMED_IN_LOG_SQL, log_id, name)
    return [(row["seq"], row["kind"], row["actor"]) for row in rows]


async def sent_by(store: EventStore, name: str, log_id: UUID) -> list[tuple[UUID, int]]:
    """(session, seq) of each event whose envelope names ``name`` as its user."""
    rows = await store.pool.fetch(SENT_BY_SQL, name, log_id)
    return [(row["session_id"], row["seq"]) for row in rows]
