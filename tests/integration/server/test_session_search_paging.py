"""The list's text filter, steered (the newest rows first, the title index only for a page
that did not fill there), answers every page as the single query did: the same sessions, in
the same order, with the same cursors, as an admin and as a member, across the point where
the pages stop filling from the newest rows (real PostgreSQL).

The newest rows hold the word often, the older ones rarely, and several rows share their
``created_at`` (the session id breaks the tie), so the first pages are answered by the
newest-first pass and the later ones by the title index; a steered pass that dropped a row,
repeated one or broke the order would differ from the reference below (the single query,
``list_sql`` with ``words``, which was the API's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import asyncpg

from app.sessions.sql.session_owners import list_visible_records
from app.sessions.sql.session_rows import STEERED_PAGES, list_sql, page_sql
from app.store import EventStore

PAGE = 4
#: rows newest first: the word in every other one of the newest, then in one of 15
NEWEST, OLDER = 24, 150


def title(index: int) -> str:
    if index < NEWEST:
        common = index % 2 == 0
    else:
        common = index % 15 == 0
    return f"Fix {'Alpha-ray' if common else 'beta'} in module {index}"


async def seed(superuser: asyncpg.Connection, owner: UUID) -> list[UUID]:
    """Sessions newest first; every third owned by ``owner``; pairs share ``created_at``."""
    await superuser.execute("INSERT INTO users (id, name) VALUES ($1, 'member')", owner)
    start = datetime(2026, 6, 1, tzinfo=UTC)
    ids = []
    for index in range(NEWEST + OLDER):
        session = uuid4()
        ids.append(session)
        at = start - timedelta(minutes=index // 2)
        await superuser.execute(
            "INSERT INTO session_state (session_id, title, created_at, updated_at, status, "
            "last_seq) VALUES ($1, $2, $3, $3, 'finished', 2)",
            session,
            title(index),
            at,
        )
        if index % 3 == 0:
            await superuser.execute(
                "INSERT INTO session_owners (session_id, user_id) VALUES ($1, $2)", session, owner
            )
    return ids


async def single_query(
    store: EventStore, owner: UUID | None, words: str, after: tuple[datetime, UUID] | None
) -> list[asyncpg.Record]:
    sql, params = list_sql(
        state=None, model=False, since=False, owner=owner is not None, after=after is not None,
        words=True,
    )  # fmt: skip
    values: dict[str, Any] = {
        "owner": owner, "words": words, "limit": PAGE,
        "after_created": after[0] if after else None, "after_id": after[1] if after else None,
    }  # fmt: skip
    return await store.pool.fetch(page_sql(sql), *(values[name] for name in params))


async def newest_pass_fills(
    store: EventStore, owner: UUID | None, words: str, after: tuple[datetime, UUID] | None
) -> bool:
    sql, params = list_sql(
        state=None, model=False, since=False, owner=owner is not None, after=after is not None,
        words=True, newest_first=True,
    )  # fmt: skip
    values: dict[str, Any] = {
        "owner": owner, "words": words, "limit": PAGE, "scan": PAGE * STEERED_PAGES,
        "after_created": after[0] if after else None, "after_id": after[1] if after else None,
    }  # fmt: skip
    return len(await store.pool.fetch(sql, *(values[name] for name in params))) >= PAGE


async def pages(
    store: EventStore, owner: UUID | None, words: str
) -> tuple[list[list[UUID]], list[bool]]:
    """Every page through the cursors, and for each whether the newest-first pass filled it;
    each page checked against the single query's answer to the same cursor."""
    found: list[list[UUID]] = []
    filled: list[bool] = []
    after: tuple[datetime, UUID] | None = None
    while True:
        records = await list_visible_records(
            store, owner=owner, limit=PAGE, words=words, after=after
        )
        reference = await single_query(store, owner, words, after)
        assert [dict(r) for r in records] == [dict(r) for r in reference]
        filled.append(await newest_pass_fills(store, owner, words, after))
        found.append([record["session_id"] for record in records])
        if len(records) < PAGE:
            return found, filled
        after = (records[-1]["created_at"], records[-1]["session_id"])


async def test_pages_across_the_switch_are_those_of_the_single_query(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    owner = uuid4()
    ids = await seed(superuser, owner)
    for who in (None, owner):
        found, filled = await pages(store, who, "alpha")
        listed = [session for page in found for session in page]
        expected_indexes = [
            i for i in range(len(ids)) if "Alpha" in title(i) and (who is None or i % 3 == 0)
        ]
        # newest first, ties broken by the session id (descending)
        created = {ids[i]: i // 2 for i in expected_indexes}
        expected = sorted((ids[i] for i in expected_indexes), key=lambda s: (created[s], -s.int))
        assert listed == expected
        assert len(set(listed)) == len(listed)
        # both ways were taken: the first page from the newest rows, a later one not
        assert filled[0] and not all(filled), (who, filled)


async def test_a_word_in_no_title_and_a_prefix_of_two_words(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    owner = uuid4()
    ids = await seed(superuser, owner)
    assert await list_visible_records(store, owner=None, limit=PAGE, words="gamma") == []
    records = await list_visible_records(store, owner=None, limit=PAGE, words="modu fix")
    assert [r["session_id"] for r in records] == [
        r["session_id"] for r in await single_query(store, None, "modu fix", None)
    ]
    assert {r["session_id"] for r in records} == set(ids[:PAGE])  # pairs share created_at
