"""How PostgreSQL holds payloads it cannot store as they are, and long ones: escapes and blob
references in the table, one blob query per page, each blob stored once, secrets masked
before a string becomes a blob. (That every reader gives them back whole is the contract's:
tests/contract/store/test_round_trips.py.)
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app.config import Settings
from app.events import Message
from app.events.masking import SecretMasker
from app.store import EventStore
from tests.support.payloads import BIG, CASES, sha256_hex


class CountingPool:
    """The store's pool, recording every statement sent through ``fetch``."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self.statements: list[str] = []

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        self.statements.append(sql)
        return await self._pool.fetch(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def blob_queries(self) -> int:
        return sum("FROM blobs" in sql for sql in self.statements)


@pytest.fixture
async def other(app_database_url: str, settings: Settings) -> AsyncIterator[EventStore]:
    """A second store (its own pool and listening connection): delivery goes through NOTIFY."""
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=settings.masker()
    ) as opened:
        yield opened


async def test_what_the_table_holds_is_storable_text_and_references(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, CASES["one blob for equal strings"]() + CASES["nul in content"]())
    rows = await store.pool.fetch(
        "SELECT payload::text AS text FROM events WHERE session_id = $1 ORDER BY seq", session
    )
    assert BIG not in rows[0]["text"] and rows[0]["text"].count(sha256_hex(BIG)) == 3
    assert '"$blob": "' + sha256_hex(BIG) + '", "chars": 1200000' in rows[0]["text"]
    assert '{"content": {"$esc": "before\\\\0after"}}' == rows[1]["text"]
    blobs = await store.pool.fetch("SELECT sha256, content, bytes FROM blobs")
    assert [(bytes(r["sha256"]).hex(), r["bytes"]) for r in blobs] == [(sha256_hex(BIG), len(BIG))]
    # A SQL reader resolves a reference with a join on the blobs table.
    text = await store.pool.fetchval(
        "SELECT b.content FROM events e JOIN blobs b "
        "ON b.sha256 = decode(e.payload->'arguments'->'a'->>'$blob', 'hex') "
        "WHERE e.session_id = $1 AND e.seq = 1",
        session,
    )
    assert text == BIG


async def test_read_as_stored_gives_references_without_fetching(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, CASES["a 1.2 MB create"]() + CASES["nul in content"]())
    counting = CountingPool(store.pool)
    store.pool = counting  # type: ignore[assignment]
    stored = await store.read(session, resolve_blobs=False)
    assert counting.blob_queries() == 0
    assert stored[0].payload["file_text"] == {"$blob": sha256_hex(BIG), "chars": len(BIG)}
    assert stored[1].payload == {"content": {"$esc": "before\\0after"}}
    async with store.subscribe(session, resolve_blobs=False) as tail:
        first = await asyncio.wait_for(anext(tail), 10)
    assert first.payload["file_text"] == {"$blob": sha256_hex(BIG), "chars": len(BIG)}
    # This process's own appends reach its subscribers without a read: as stored, too.
    more = uuid.uuid4()
    async with store.subscribe(more, resolve_blobs=False) as tail:
        await store.append(more, CASES["a 1.2 MB create"]())
        offered = await asyncio.wait_for(anext(tail), 10)
    assert offered.payload["file_text"] == {"$blob": sha256_hex(BIG), "chars": len(BIG)}
    # Either way the payload is the one the chain covers.
    assert offered.chain(b"") == 2  # over the payload's commitment (app/events/chain.py)
    assert stored[0].chain(b"") == 2


async def test_one_blob_query_per_page(store: EventStore, other: EventStore) -> None:
    session = uuid.uuid4()
    texts = [f"{i:04d}" + "y" * 70_000 for i in range(40)]
    await store.append(session, [Message(content="no blob here")])
    for start in range(0, 40, 10):
        await store.append(session, [Message(content=t) for t in texts[start : start + 10]])
    counting = CountingPool(other.pool)
    other.pool = counting  # type: ignore[assignment]

    events = await other.read(session)
    assert [e.payload["content"] for e in events[1:]] == texts
    assert counting.blob_queries() == 1

    counting.statements.clear()
    page = await other.read_all(limit=1000)
    assert [e.payload["content"] for e in page if e.session_id == session][1:] == texts
    assert counting.blob_queries() == 1

    counting.statements.clear()
    assert (await other.read(session, limit=1))[0].payload == {"content": "no blob here"}
    assert counting.blob_queries() == 0  # a page without references: no query at all

    counting.statements.clear()
    async with other.subscribe(session) as tail:
        delivered = [await asyncio.wait_for(anext(tail), 10) for _ in range(41)]
    assert [e.payload["content"] for e in delivered[1:]] == texts
    assert counting.blob_queries() == 1  # the subscription read one page of 41 events

    rows = await store.pool.fetchval("SELECT count(*) FROM blobs")
    assert rows == 40


async def test_append_stores_each_blob_once_and_is_idempotent(store: EventStore) -> None:
    session = uuid.uuid4()
    events = [*CASES["one blob for equal strings"](), Message(content=BIG)]
    first = await store.append(session, events, expected_seq=0)
    again = await store.append(session, events, expected_seq=0)  # a re-sent batch
    assert [e.seq for e in again] == [e.seq for e in first] == [1, 2]
    assert [e.payload for e in again] == [e.payload for e in first]
    assert await store.pool.fetchval("SELECT count(*) FROM blobs") == 1
    assert (await store.verify(session)).blobs == 1


async def test_a_secret_inside_a_long_string_is_masked_before_it_becomes_a_blob(
    app_database_url: str, settings: Settings
) -> None:
    """The masker searches the payload's text; a long string is no longer in that text.

    Checked to fail with masking by text alone (the secret reached the blob and the reader).
    """
    secret = "sk-live-0123456789abcdef"
    masker = SecretMasker({secret: "OPENAI_API_KEY"})
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=masker
    ) as store:
        session = uuid.uuid4()
        leaky = "y" * 100_000 + f" key={secret} " + "\x00"
        recorded = await store.append(session, [Message(content=leaky), Message(content=BIG)])
        assert secret not in recorded[0].payload["content"]
        assert "[secret OPENAI_API_KEY]" in (await store.read(session))[0].payload["content"]
        stored = await store.pool.fetch("SELECT content FROM blobs")
        assert len(stored) == 2 and not any(secret in row["content"] for row in stored)
