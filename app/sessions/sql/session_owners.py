"""Who owns a session (migration 0011), and the session list as one user may see it.

A user sees the sessions they created through the API; an admin sees every session. The
list is the ``session_state`` rows (``session_rows``) narrowed by owner, by the same filters
as ``chronicle sessions``, and paged by a keyset cursor ``(created_at, session_id)`` in the
list's own order, so a page costs the same however deep it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.events.id_prefix import prefix_range
from app.sessions.sql.session_rows import (
    CLAIMED,
    QUALIFIED_COLUMNS,
    STEERED_PAGES,
    ListedState,
    ListOrder,
    SessionRow,
    list_sql,
    page_sql,
    totals_sql,
)
from app.store import Record

if TYPE_CHECKING:
    from app.store import EventStore

#: A session counts against its owner's cap while a worker is asked to run it (its lease row,
#: from the request until the run is released: waiting for a worker counts too), while the
#: projection sees it working, or before it ever ran: no state yet, or just created (the
#: projection has not seen it), which is trusted for ``FRESH_SECONDS`` only, so an owner row
#: whose session was never recorded (its creation failed half-way) does not count for ever.
#: A session of an external agent's model calls (``agent`` ``external``: app/external) is run
#: by no worker: it does not count, with no state (the gateway's) or working (a command
#: ``chronicle record`` runs, or ran until its process was killed).
FRESH_SECONDS = 300
#: Whether ``session_owners o`` (left-joined with ``session_state s``) counts, as above.
COUNTS = f"""(EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = o.session_id)
       OR (s.status = 'working' AND s.agent IS DISTINCT FROM 'external')
       OR (s.session_id IS NOT NULL AND s.status IS NULL AND s.agent IS DISTINCT FROM 'external')
       OR (s.session_id IS NULL AND o.created_at > now() - interval '{FRESH_SECONDS} seconds'))"""
ACTIVE_SQL = f"""
SELECT count(*) FROM session_owners o
LEFT JOIN session_state s ON s.session_id = o.session_id
WHERE o.user_id = $1 AND {COUNTS}
"""
#: The user's active sessions counted (``ACTIVE_SQL``), and the new session made theirs when
#: they are fewer than the cap ($3); the count is returned either way.
RESERVE_SQL = f"""
WITH active AS ({ACTIVE_SQL.strip()}),
reserved AS (
    INSERT INTO session_owners (session_id, user_id)
    SELECT $2, $1 FROM active WHERE active.count < $3
    RETURNING 1
)
SELECT active.count FROM active
"""
#: One user's creations are serialised while the cap is checked (a transaction lock, in a
#: key space of its own), so two requests at once cannot both take the last place.
RESERVE_LOCK_CLASS = 1131


async def record_owner(store: EventStore, session_id: UUID, user_id: UUID) -> None:
    await store.pool.execute(
        "INSERT INTO session_owners (session_id, user_id) VALUES ($1, $2)", session_id, user_id
    )


async def own_session(store: EventStore, session_id: UUID, user_id: UUID) -> UUID | None:
    """Make ``user_id`` the session's owner unless it has one already; the owner it has
    (a session the model gateway opens on a first call, which two calls may race to open)."""
    await store.pool.execute(
        "INSERT INTO session_owners (session_id, user_id) VALUES ($1, $2) "
        "ON CONFLICT (session_id) DO NOTHING",
        session_id,
        user_id,
    )
    return await owner_of(store, session_id)


async def reserve_session(store: EventStore, session_id: UUID, user_id: UUID, cap: int) -> int:
    """Make ``user_id`` the owner of the new session if fewer than ``cap`` of theirs are
    active; returns how many were active (the session was not reserved when that is
    ``cap`` or more)."""
    async with store.pool.acquire() as connection, connection.transaction():
        await connection.execute(
            "SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))",
            RESERVE_LOCK_CLASS,
            str(user_id),
        )
        # counted and recorded in one statement (its snapshot taken after the lock), so the
        # lock is held for one round trip and the commit: a burst of one user's creations
        # waits on each other that much less
        active: int = await connection.fetchval(RESERVE_SQL, user_id, session_id, cap)
        return active


async def owner_of(store: EventStore, session_id: UUID) -> UUID | None:
    owner: UUID | None = await store.pool.fetchval(
        "SELECT user_id FROM session_owners WHERE session_id = $1", session_id
    )
    return owner


async def active_sessions(store: EventStore, user_id: UUID) -> int:
    count: int = await store.pool.fetchval(ACTIVE_SQL, user_id)
    return count


#: The page query (``session_rows.list_sql`` with its owner and cursor options).
visible_list_sql = list_sql


@dataclass(frozen=True)
class SessionFilters:
    """What a session list is narrowed to (the API's list filters, the review queue's): each
    None is no filter. ``words``: the title has words beginning with each of them;
    ``id_prefix``: the id begins with these hex digits; ``label``, ``tag``, ``unreviewed``:
    by the session's annotations; ``run`` and ``task``: an evaluation run's trials."""

    state: ListedState | None = None
    model: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    words: str | None = None
    id_prefix: str | None = None
    label: str | None = None
    tag: str | None = None
    unreviewed: bool = False
    run: str | None = None
    task: str | None = None

    def flags(self) -> dict[str, Any]:
        """``list_sql``'s and ``totals_sql``'s switches for these filters."""
        return {
            "state": self.state,
            "model": self.model is not None,
            "since": self.since is not None,
            "until": self.until is not None,
            "words": self.words is not None,
            "id_range": self.id_prefix is not None,
            "label": self.label is not None,
            "tag": self.tag is not None,
            "unreviewed": self.unreviewed,
            "run": self.run is not None,
            "task": self.task is not None,
        }

    def values(self) -> dict[str, Any]:
        """The queries' parameters by name."""
        low, high = prefix_range(self.id_prefix) if self.id_prefix is not None else (None, None)
        return {
            "state": self.state,
            "model": self.model,
            "since": self.since,
            "until": self.until,
            "words": self.words,
            "id_low": low,
            "id_high": high,
            "label": self.label,
            "tag": self.tag,
            "run": self.run,
            "task": self.task,
        }


async def list_visible_records(
    store: EventStore,
    *,
    owner: UUID | None,
    limit: int,
    after: tuple[datetime, UUID] | None = None,
    sort: ListOrder = "newest",
    filters: SessionFilters | None = None,
    **named: Any,
) -> list[Record]:
    """A page of the sessions owned by ``owner`` (every session when None) that pass
    ``filters`` (or the same given by name), newest first (``sort``: another order), after
    the ``(created_at, session_id)`` cursor if given: the records as fetched (``SessionRow``'s
    columns, and ``session_rows.PAGE_EXTRAS``), since the API validates the page it answers
    with once, not a model per row.

    ``words`` are looked for first in the newest ``limit * STEERED_PAGES`` rows the filters pass
    (walking the newest-first index): a word in many titles fills the page there, where the
    title index would have the planner read and sort all its matches. Only a page that did
    not fill is asked again of the title index (a rare word: few matches to read). Either
    answer is the page the one query would give, so the order and the cursors are the same."""
    chosen = filters if filters is not None else SessionFilters(**named)
    values: dict[str, Any] = {
        **chosen.values(),
        "owner": owner,
        "after_created": after[0] if after else None,
        "after_id": after[1] if after else None,
        "limit": limit,
        "scan": limit * STEERED_PAGES,
    }
    query = functools.partial(
        visible_list_sql, owner=owner is not None, after=after is not None, sort=sort,
        **chosen.flags(),
    )  # fmt: skip
    records: list[Record]
    if chosen.words is not None and sort == "newest":
        sql, params = query(newest_first=True)
        records = await store.pool.fetch(page_sql(sql, sort), *(values[n] for n in params))
        if len(records) >= limit:
            return records
    sql, params = query()
    records = await store.pool.fetch(page_sql(sql, sort), *(values[n] for n in params))
    return records


async def visible_totals(
    store: EventStore, *, owner: UUID | None, filters: SessionFilters, cap: int | None = None
) -> Record:
    """How many of ``owner``'s sessions (everyone's when None) pass ``filters``, with their
    model calls, tokens, cost and unpriced calls summed (``session_rows.totals_sql``);
    ``cap``: count at most that many."""
    sql, params = totals_sql(owner=owner is not None, cap=cap is not None, **filters.flags())
    values = {**filters.values(), "owner": owner, "cap": cap}
    row: Record = await store.pool.fetchrow(sql, *(values[n] for n in params))
    return row


async def visible_session(
    store: EventStore, session_id: UUID, *, owner: UUID | None
) -> SessionRow | None:
    """The session's ``session_state`` row if ``owner`` (None: anyone) may see it."""
    row = await store.pool.fetchrow(
        f"SELECT {QUALIFIED_COLUMNS}, {CLAIMED} AS claimed FROM session_state s "
        "WHERE s.session_id = $1 AND ($2::uuid IS NULL OR EXISTS (SELECT 1 FROM session_owners o "
        "WHERE o.session_id = s.session_id AND o.user_id = $2))",
        session_id,
        owner,
    )
    return SessionRow(**dict(row)) if row else None
