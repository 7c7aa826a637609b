"""Payloads PostgreSQL cannot hold as they are, and long ones, round-trip through the real store.

Before the stored form (app/events/stored_form.py) and migration 0004: a string with NUL or a
lone surrogate raised ``InvalidEventError`` (the model call or observation was lost), and a
payload over ``max_event_bytes`` (1 MiB: a 1.2 MB ``create``, a 5 MB command output) raised
``EventTooLargeError``: every round trip below failed at its ``append``, except the marker
look-alike, which guards the new form (a payload that merely looks like an escape or a blob
reference must come back as it was).
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest

from app.config import Settings
from app.events import Event, FileEdit, McpCall, Message, Run, RunOutput
from app.events.canonical import chain_hash
from app.events.masking import SecretMasker
from app.store import EventStore, RecordedEvent

BIG = "x" * 1_200_000  # a 1.2 MB file text
OUTPUT = "".join(f"line {i} of a long build log\n" for i in range(180_000))  # ~5 MB
SHA = "ab" * 32


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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
        app_database_url, config=settings.store_config(), masker=settings.masker()
    ) as opened:
        yield opened


# Each case: the events of a session, appended in one batch (new event ids each time).
CASES: dict[str, Callable[[], list[Event]]] = {
    "nul in content": lambda: [Message(content="before\x00after")],
    "nul in keys": lambda: [McpCall(server="s", tool="t", arguments={"k\x00ey": "v", "plain": 1})],
    "lone surrogates": lambda: [
        Run(command="cat caf\udce9.txt"),
        McpCall(server="s", tool="t", arguments={"caf\udce9": ["\ud800", {"x": "\udfff"}]}),
    ],
    "looks like a marker": lambda: [
        McpCall(
            server="s",
            tool="t",
            arguments={
                "$blob": SHA,
                "chars": 3,
                "nested": {"$esc": "caf\\udce9"},
                "pairs": {"$obj": [["a", 1]]},
                "text": '{"$blob": "' + SHA + '", "chars": 3}',
            },
        )
    ],
    "a 1.2 MB create": lambda: [FileEdit(command="create", path="/w/big.txt", file_text=BIG)],
    "a 5 MB command output": lambda: [
        Run(command="make"),
        RunOutput(output=OUTPUT, exit_code=0, cause=1),
    ],
    "one blob for equal strings": lambda: [
        McpCall(server="s", tool="t", arguments={"a": BIG, "b": [BIG, {"c": BIG}]})
    ],
    "a long string with NUL": lambda: [Message(content=("bin\x00ary\udce9" * 20_000))],
}


def _payloads(events: list[RecordedEvent]) -> list[dict[str, Any]]:
    return [event.payload for event in events]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_round_trip_through_every_reader(
    case: str, store: EventStore, other: EventStore
) -> None:
    events = CASES[case]()
    expected = [event.payload() for event in events]
    session = uuid.uuid4()
    async with other.subscribe(session) as live, other.subscribe_all() as everything:
        recorded = await store.append(session, events, expected_seq=0)
        assert _payloads(recorded) == expected  # the events append returns: no fetch
        assert _payloads(await store.read(session)) == expected
        assert _payloads(await other.read(session)) == expected
        assert _payloads([e for e in await other.read_all() if e.session_id == session]) == (
            expected
        )
        delivered = [await asyncio.wait_for(anext(live), 10) for _ in events]
        assert _payloads(delivered) == expected
        seen: list[RecordedEvent] = []
        while len(seen) < len(events):
            event = await asyncio.wait_for(anext(everything), 10)
            if event.session_id == session:
                seen.append(event)
        assert _payloads(seen) == expected
        # The typed events come back whole too.
        assert [e.event().payload() for e in delivered] == expected
    report = await store.verify(session)
    assert report.ok, report.reason


async def test_what_the_table_holds_is_storable_text_and_references(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(session, CASES["one blob for equal strings"]() + CASES["nul in content"]())
    rows = await store.pool.fetch(
        "SELECT payload::text AS text FROM events WHERE session_id = $1 ORDER BY seq", session
    )
    assert BIG not in rows[0]["text"] and rows[0]["text"].count(_sha256(BIG)) == 3
    assert '"$blob": "' + _sha256(BIG) + '", "chars": 1200000' in rows[0]["text"]
    assert '{"content": {"$esc": "before\\\\0after"}}' == rows[1]["text"]
    blobs = await store.pool.fetch("SELECT sha256, content, bytes FROM blobs")
    assert [(bytes(r["sha256"]).hex(), r["bytes"]) for r in blobs] == [(_sha256(BIG), len(BIG))]
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
    assert stored[0].payload["file_text"] == {"$blob": _sha256(BIG), "chars": len(BIG)}
    assert stored[1].payload == {"content": {"$esc": "before\\0after"}}
    async with store.subscribe(session, resolve_blobs=False) as tail:
        first = await asyncio.wait_for(anext(tail), 10)
    assert first.payload["file_text"] == {"$blob": _sha256(BIG), "chars": len(BIG)}
    # This process's own appends reach its subscribers without a read: as stored, too.
    more = uuid.uuid4()
    async with store.subscribe(more, resolve_blobs=False) as tail:
        await store.append(more, CASES["a 1.2 MB create"]())
        offered = await asyncio.wait_for(anext(tail), 10)
    assert offered.payload["file_text"] == {"$blob": _sha256(BIG), "chars": len(BIG)}
    # Either way the payload is the one the chain covers.
    assert chain_hash(b"", offered.hashed_document()) == offered.hash
    assert chain_hash(b"", stored[0].hashed_document()) == stored[0].hash


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
    assert _payloads(again) == _payloads(first)
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
        app_database_url, config=settings.store_config(), masker=masker
    ) as store:
        session = uuid.uuid4()
        leaky = "y" * 100_000 + f" key={secret} " + "\x00"
        recorded = await store.append(session, [Message(content=leaky), Message(content=BIG)])
        assert secret not in recorded[0].payload["content"]
        assert "[secret OPENAI_API_KEY]" in (await store.read(session))[0].payload["content"]
        stored = await store.pool.fetch("SELECT content FROM blobs")
        assert len(stored) == 2 and not any(secret in row["content"] for row in stored)
