"""The ``otel_spans`` table (migration 0022): spans received over OTLP, waiting for their trace
to settle into the log.

Stored once per user, trace and span (``ON CONFLICT DO NOTHING``: a span an exporter sends
again is not stored again); read back a page at a time in the order the spans ran (end,
then start, then id) under a lock on the trace, so two settlers of one trace take turns.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import orjson

from app.interchange.otel.received import ReceivedSpan
from app.store import EventStore, collector_paused

STAGE_SQL = """
INSERT INTO otel_spans (user_id, trace_id, span_id, is_root, start_ns, end_ns, conversation, span)
SELECT $1, t.trace_id, t.span_id, t.is_root, t.start_ns, t.end_ns, t.conversation, t.span
FROM unnest($2::text[], $3::text[], $4::boolean[], $5::bigint[], $6::bigint[], $7::text[],
            $8::bytea[]) AS t(trace_id, span_id, is_root, start_ns, end_ns, conversation, span)
ON CONFLICT DO NOTHING
RETURNING trace_id, span_id, is_root
"""
#: Serialises the settling of one user's trace (a transaction lock in a key space of its own).
SETTLE_LOCK_CLASS = 1226
LOCK_SQL = "SELECT pg_advisory_xact_lock($1, hashtext($2 || $3))"
#: The waiting spans in the order they ran; the body only of those the settler does not hold
#: ($4: the ids it holds, from the request that brought them).
WAITING_SQL = """
SELECT span_id, CASE WHEN span_id = ANY($4::text[]) THEN NULL ELSE span END AS span
FROM otel_spans
WHERE user_id = $1 AND trace_id = $2 AND settled_seq IS NULL
ORDER BY end_ns, start_ns, span_id
LIMIT $3
"""
SETTLED_SESSION_SQL = """
SELECT session_id FROM otel_spans
WHERE user_id = $1 AND trace_id = $2 AND session_id IS NOT NULL
LIMIT 1
"""
CONVERSATION_SQL = """
SELECT conversation FROM otel_spans
WHERE user_id = $1 AND trace_id = $2 AND conversation IS NOT NULL
ORDER BY end_ns, start_ns, span_id
LIMIT 1
"""
ROOTS_SQL = """
SELECT span_id FROM otel_spans WHERE user_id = $1 AND trace_id = $2 AND is_root
"""
MARK_SQL = """
UPDATE otel_spans AS o SET session_id = $3, settled_seq = t.seq
FROM unnest($4::text[], $5::integer[]) AS t(span_id, seq)
WHERE o.user_id = $1 AND o.trace_id = $2 AND o.span_id = t.span_id
"""
USER_NAME_SQL = "SELECT name FROM users WHERE id = $1"
#: The session's model calls that asked for these tool calls: tool call id -> the first seq.
EARLIER_CALLS_SQL = """
SELECT DISTINCT ON (call ->> 'id') call ->> 'id' AS id, e.seq
FROM events AS e
CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(e.payload -> 'response' -> 'tool_calls') = 'array'
         THEN e.payload -> 'response' -> 'tool_calls' ELSE '[]'::jsonb END
) AS call
WHERE e.session_id = $1 AND e.kind = 'llm.call' AND call ->> 'id' = ANY($2::text[])
ORDER BY call ->> 'id', e.seq
"""
QUIET_SQL = """
SELECT user_id, trace_id FROM otel_spans
WHERE settled_seq IS NULL
GROUP BY user_id, trace_id
HAVING max(received_at) < now() - make_interval(secs => $1)
ORDER BY min(received_at)
LIMIT $2
"""


@dataclass(frozen=True)
class Staged:
    """What storing a request's spans did: spans new here, spans stored before, the traces
    (new spans) whose root span came, and which spans (trace, span) this request stored."""

    new: int
    again: int
    traces: frozenset[str]
    rooted: frozenset[str]
    stored: frozenset[tuple[str, str]] = frozenset()

    def stored_here(self, spans: Sequence[ReceivedSpan]) -> list[ReceivedSpan]:
        """Those of ``spans`` this request stored: a span stored before keeps its first copy,
        which a settler must read back rather than take this one for it."""
        return [span for span in spans if (span.trace_id, span.span_id) in self.stored]


async def stage(store: EventStore, user_id: UUID, spans: Sequence[ReceivedSpan]) -> Staged:
    """Store ``spans`` for ``user_id``, each once."""
    if not spans:
        return Staged(0, 0, frozenset(), frozenset())
    rows = await store.pool.fetch(
        STAGE_SQL,
        user_id,
        [span.trace_id for span in spans],
        [span.span_id for span in spans],
        [span.parent_span_id is None for span in spans],
        [span.start_ns for span in spans],
        [span.end_ns for span in spans],
        [conversation_of(span) for span in spans],
        [orjson.dumps(span.model_dump()) for span in spans],
    )
    traces = frozenset(row["trace_id"] for row in rows)
    rooted = frozenset(row["trace_id"] for row in rows if row["is_root"])
    stored = frozenset((row["trace_id"], row["span_id"]) for row in rows)
    return Staged(len(rows), len(spans) - len(rows), traces, rooted, stored)


def conversation_of(span: ReceivedSpan) -> str | None:
    value = span.attributes.get("gen_ai.conversation.id")
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
        return str(value)[:1000]
    return None


async def quiet_traces(
    store: EventStore, quiet_seconds: float, limit: int
) -> list[tuple[UUID, str]]:
    """Traces with waiting spans none of which came in the last ``quiet_seconds``."""
    rows = await store.pool.fetch(QUIET_SQL, quiet_seconds, limit)
    return [(row["user_id"], row["trace_id"]) for row in rows]


def span_of(raw: bytes) -> ReceivedSpan:
    return ReceivedSpan.model_validate(orjson.loads(raw))


class SettlingTrace:
    """One user's trace, locked for settling (``settling``): its waiting spans a page at a
    time, where it goes, and the marking of what settled."""

    def __init__(self, connection: Any, user_id: UUID, trace_id: str) -> None:
        self._connection = connection
        self.user_id = user_id
        self.trace_id = trace_id

    async def waiting(
        self, limit: int, known: Mapping[str, ReceivedSpan] | None = None
    ) -> list[ReceivedSpan]:
        """The next ``limit`` waiting spans, in the order they ran. ``known``: spans of the
        trace the caller holds (by id), taken as they are rather than read back."""
        known = known or {}
        rows = await self._connection.fetch(
            WAITING_SQL, self.user_id, self.trace_id, limit, list(known)
        )
        with collector_paused():  # a page of spans that all survive: see collector_pause.py
            return [
                known[row["span_id"]] if row["span"] is None else span_of(row["span"])
                for row in rows
            ]

    async def conversation(self) -> str | None:
        return await self._connection.fetchval(CONVERSATION_SQL, self.user_id, self.trace_id)

    async def settled_session(self) -> UUID | None:
        """The session the trace's spans settled into so far, if any did."""
        return await self._connection.fetchval(SETTLED_SESSION_SQL, self.user_id, self.trace_id)

    async def roots(self) -> set[str]:
        rows = await self._connection.fetch(ROOTS_SQL, self.user_id, self.trace_id)
        return {row["span_id"] for row in rows}

    async def user_name(self) -> str:
        return await self._connection.fetchval(USER_NAME_SQL, self.user_id) or ""

    async def mark(self, session_id: UUID, span_ids: Sequence[str], seqs: Sequence[int]) -> None:
        """These spans settled into ``session_id`` at these seqs."""
        await self._connection.execute(
            MARK_SQL, self.user_id, self.trace_id, session_id, list(span_ids), list(seqs)
        )


async def earlier_calls(
    store: EventStore, session_id: UUID, call_ids: Collection[str]
) -> dict[str, int]:
    """Tool call id -> seq of the session's first ``llm.call`` that asked for it, for those
    of ``call_ids`` one did."""
    if not call_ids:
        return {}
    rows = await store.pool.fetch(EARLIER_CALLS_SQL, session_id, sorted(call_ids))
    return {row["id"]: row["seq"] for row in rows}


@contextlib.asynccontextmanager
async def settling(store: EventStore, user_id: UUID, trace_id: str) -> AsyncIterator[SettlingTrace]:
    """The trace locked for settling, in one transaction: committed when the block ends."""
    async with store.pool.acquire() as connection, connection.transaction():
        await connection.execute(LOCK_SQL, SETTLE_LOCK_CLASS, str(user_id), trace_id)
        yield SettlingTrace(connection, user_id, trace_id)
