"""The content-addressed tables (``llm_messages``, ``blobs``) and the one check they share.

Both hold rows keyed by the sha256 of their own content, which the chain covers only through
that key: an event names a key, and verifying means finding the row and re-hashing its
content here (not in the database). A table differs from the other only in its columns, how
its content hashes, how many rows a query fetches and how a problem is worded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.events.canonical import CanonicalJsonError, stored_json

if TYPE_CHECKING:
    from app.store.event_store import EventStore


def message_key(message: Any) -> bytes:
    """The key a prompt message read from llm_messages must have: sha256 of the canonical
    JSON of its stored form (escapes and all, as it was put)."""
    return hashlib.sha256(stored_json(message).encode()).digest()


def blob_key(content: str) -> bytes:
    """The key a blob must have: sha256 of its UTF-8 text."""
    return hashlib.sha256(content.encode("utf-8")).digest()


def _message_rehash(message: Any) -> bytes | None:
    try:
        return message_key(message)
    except CanonicalJsonError:
        return None


@dataclass(frozen=True)
class ContentTable:
    """One content-addressed table and the words its problems are reported in."""

    table: str
    key_column: str
    content_column: str
    #: Keys per query: blobs are long, so fewer of them.
    per_query: int
    #: The key the content must have (None when it cannot even be hashed).
    rehash: Callable[[Any], bytes | None]
    #: How an event's reference is named: (key hex, seq) -> "the blob … that event 7 refers to".
    reference: Callable[[str, int], str]
    #: The complaint about a name that is not a hex digest: (name, seq) -> sentence.
    not_a_key: Callable[[str, int], str]
    #: Where the row lives, in a sentence ("llm_messages", "the blobs table").
    where: str
    #: A stored row named in the whole-table check ("stored message", "blob").
    row_name: str

    def by_keys_sql(self) -> str:
        return (
            f"SELECT {self.key_column} AS key, {self.content_column} AS content "
            f"FROM {self.table} WHERE {self.key_column} = ANY($1::bytea[])"
        )

    def page_sql(self) -> str:
        return (
            f"SELECT {self.key_column} AS key, {self.content_column} AS content "
            f"FROM {self.table} WHERE {self.key_column} > $1 ORDER BY {self.key_column} LIMIT $2"
        )


MESSAGES = ContentTable(
    table="llm_messages",
    key_column="hash",
    content_column="message",
    per_query=1000,
    rehash=_message_rehash,
    reference=lambda name, seq: f"the prompt message {name} of the llm.call at seq {seq}",
    not_a_key=lambda name, seq: (
        f"the llm.call at seq {seq} names {name!r}, which is not a message hash"
    ),
    where="llm_messages",
    row_name="stored message",
)

BLOBS = ContentTable(
    table="blobs",
    key_column="sha256",
    content_column="content",
    per_query=50,
    rehash=blob_key,
    reference=lambda name, seq: f"the blob {name} that event {seq} refers to",
    not_a_key=lambda name, seq: (
        f"event {seq} refers to blob {name!r}, which is not a sha256 hex digest"
    ),
    where="the blobs table",
    row_name="blob",
)


async def fetch_rows(store: EventStore, sql: str, *args: Any) -> list[Any]:
    """Rows of a read, retried through a lost connection like the store's own reads."""
    return await store._retrying(lambda: store.pool.fetch(sql, *args))


async def named_rows_problem(
    store: EventStore, table: ContentTable, named: Mapping[str, int]
) -> str | None:
    """The first problem with the rows a session names (key hex -> seq of the first event
    naming it), checked in the order they were first named: a name that is no key, a row
    missing, or a row that does not re-hash to its key. None when all are sound."""
    names = sorted(named, key=named.__getitem__)
    for start in range(0, len(names), table.per_query):
        keys: dict[bytes, str] = {}
        for name in names[start : start + table.per_query]:
            try:
                keys[bytes.fromhex(name)] = name
            except ValueError:
                return table.not_a_key(name, named[name])
        rows = await fetch_rows(store, table.by_keys_sql(), list(keys))
        found = {bytes(row["key"]): row["content"] for row in rows}
        for key, name in keys.items():
            reference = table.reference(name, named[name])
            if key not in found:
                return f"{reference} is missing from {table.where} (deleted?)"
            if table.rehash(found[key]) != key:
                return f"{reference} does not match its hash ({table.where} was edited)"
    return None


async def stored_rows_problem(
    store: EventStore, table: ContentTable, page_size: int | None = None
) -> tuple[int, str | None]:
    """Every row of the table re-hashed, in key order: (rows checked, the first one that does
    not match its key, or None)."""
    size = page_size or table.per_query
    checked, after = 0, b""
    while True:
        rows = await fetch_rows(store, table.page_sql(), after, size)
        for row in rows:
            key = bytes(row["key"])
            if table.rehash(row["content"]) != key:
                return checked, f"{table.row_name} {key.hex()} does not match its hash (edited)"
            checked += 1
        if len(rows) < size:
            return checked, None
        after = bytes(rows[-1]["key"])
