"""Traces received from instrumented applications, settled into sessions of the log.

A request's spans are first stored as they came (``otel_spans``, once per user, trace and
span), and answered. A trace is then *settled*: its waiting spans are read a page at a time
in the order they ran (end time, then start, then id), turned into events
(``received_events``) and appended to the trace's session, and marked settled with the seq
they became. A trace settles as soon as its root span has come (a root span ends last, so an
SDK exports it last), and otherwise once no span of it has come for ``quiet_seconds``
(``TraceSettler``). So the session is the same whatever order an exporter sent the spans in;
a span that comes after its trace settled is appended then, after what is there.

Which session: the trace's ``gen_ai.conversation.id`` (the first span that has one), else
the trace itself, one session per user and conversation (``session_id_for``): the turns of
one conversation, each a trace of its own, are one session. Once a span of the trace has
settled, the rest go where it went. A new session is an external agent's session
(``config.agent`` ``external``, ``config.source`` ``otlp``, the client the spans' service), owned
by the token's user, so the views, the page, scoring and positional replay take it as they
take the gateway's.

Bounded: a page is ``PAGE`` spans, so a trace of a million spans is never held in memory.
Idempotent: a span stored again is not stored again, and the events of a span have ids
derived from it, so appending a page twice (a crash between the append and the marking)
finds them recorded.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from app.events import Event, SessionCreated
from app.interchange.otel.received import ReceivedSpan
from app.interchange.otel.received_events import span_events, tool_call_ids
from app.interchange.sql.received_spans import (
    Staged,
    earlier_calls,
    quiet_traces,
    settling,
    stage,
)
from app.sessions.sql.session_owners import own_session
from app.store import DATABASE_GONE_ERRORS, ConcurrencyError, EventStore, collector_paused

log = logging.getLogger(__name__)

#: Spans settled at a time.
PAGE = 1000
#: The namespace of received sessions' ids (uuid5 of the user and the conversation or trace).
OTLP_NAMESPACE = UUID("0f7c3b1e-26a4-4d0b-8f2e-5a1c7e9b3d26")
#: How long a trace without its root span waits for more spans before it settles.
QUIET_SECONDS = 5.0
#: Spans of woken traces a settler holds at most (one full request's; the rest are read back).
HELD_SPANS = 50_000
#: Traces a settler settles at once: on two cores, two keep both busy (one appending in
#: PostgreSQL, one mapping in Python); more only queue. Each holds two connections.
LANES = 2


def session_id_for(user_id: UUID, *, conversation: str | None, trace_id: str) -> UUID:
    if conversation is not None:
        return uuid.uuid5(OTLP_NAMESPACE, f"{user_id}\nconversation\n{conversation}")
    return uuid.uuid5(OTLP_NAMESPACE, f"{user_id}\ntrace\n{trace_id}")


async def receive(store: EventStore, user_id: UUID, spans: Sequence[ReceivedSpan]) -> Staged:
    """Store a request's spans; what was new (settling is ``settle_trace``'s)."""
    return await stage(store, user_id, spans)


async def settle_trace(
    store: EventStore,
    user_id: UUID,
    trace_id: str,
    known: Mapping[str, ReceivedSpan] | None = None,
) -> int:
    """Append the trace's waiting spans to its session; how many spans settled. ``known``:
    spans of the trace the caller holds (the request that just stored them), by id: not
    read back."""
    settled = 0
    user = ""
    while True:
        async with settling(store, user_id, trace_id) as trace:
            spans = await trace.waiting(PAGE, known)
            if not spans:
                return settled
            conversation = await trace.conversation()
            session_id = await trace.settled_session() or session_id_for(
                user_id, conversation=conversation, trace_id=trace_id
            )
            user = user or await trace.user_name()
            opening = _opening(spans, conversation, user)
            seqs = await _append(store, session_id, user_id, opening, spans, await trace.roots())
            await trace.mark(session_id, [span.span_id for span in spans], seqs)
            settled += len(spans)


async def _append(
    store: EventStore,
    session_id: UUID,
    user_id: UUID,
    opening: SessionCreated,
    spans: list[ReceivedSpan],
    roots: set[str],
) -> list[int]:
    """Append the events of ``spans`` at the session's end (opening it when new); the seq of
    each span's first event. Another trace of the same conversation may append meanwhile:
    then this page is made again at the new end."""
    last = 0
    for _ in range(20):
        last = await store.last_seq(session_id)
        first_events: list[Event] = [] if last else [opening]
        # the model calls of earlier pages and requests that asked for this page's tools
        asked = await earlier_calls(store, session_id, tool_call_ids(spans)) if last else {}
        with collector_paused():  # thousands of events that all survive: collector_pause.py
            settled = span_events(
                session_id,
                last + 1 + len(first_events),
                spans,
                root_ids=roots,
                earlier_calls=asked,
            )
        events = first_events + [event for _, event in settled.events]
        try:
            recorded = await store.append(
                session_id, events, expected_seq=last, messages=settled.messages
            )
        except ConcurrencyError:
            continue
        if first_events:
            await own_session(store, session_id, user_id)
        first: dict[str, int] = {}
        for (span, _), event in zip(settled.events, recorded[len(first_events) :], strict=True):
            first.setdefault(span.span_id, event.seq)
        return [first.get(span.span_id, recorded[-1].seq) for span in spans]
    raise ConcurrencyError(session_id, last, await store.last_seq(session_id))


def _opening(spans: list[ReceivedSpan], conversation: str | None, user: str) -> SessionCreated:
    """The ``session.created`` of a session the trace of ``spans`` opens: its client is the
    spans' service, its title the conversation, else the trace's root span (else the first)."""
    first = spans[0]
    root = next((span for span in spans if span.parent_span_id is None), first)
    client = (first.service or first.scope or "otlp")[:100]
    config: dict[str, Any] = {
        "agent": "external",
        "client": client,
        "source": "otlp",
        "trace_id": first.trace_id,
    }
    if conversation is not None:
        config["conversation_id"] = conversation
    title = f"{client}: {(conversation or root.name)[:200]}"
    return SessionCreated(title=title, config=config, user=user)


class TraceSettler:
    """Settles traces in the background: those whose root span came, at once (``wake``), and
    the rest once quiet. One per server process; several processes share the work (a trace's
    settling is serialised in the database)."""

    def __init__(
        self,
        store: EventStore,
        *,
        quiet_seconds: float = QUIET_SECONDS,
        poll_seconds: float = 1.0,
        lanes: int = LANES,
    ) -> None:
        self._store = store
        self._quiet = quiet_seconds
        self._poll = poll_seconds
        self._lanes = lanes
        #: spans settled by this settler since it was made
        self.settled = 0
        #: (user, trace) -> the spans of it the request that woke us brought, by id
        self._due: dict[tuple[UUID, str], dict[str, ReceivedSpan]] = {}
        self._held = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="otlp trace settler")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    def wake(
        self, user_id: UUID, traces: frozenset[str], spans: Sequence[ReceivedSpan] = ()
    ) -> None:
        """Settle these traces of ``user_id`` now; ``spans``: those the request stored
        (``Staged.stored_here``), which need not be read back (held until their trace
        settles; past ``HELD_SPANS`` waiting, the rest are read back: requests faster than
        settling do not grow the process)."""
        for trace in traces:
            self._due.setdefault((user_id, trace), {})
        for span in spans:
            held = self._due.get((user_id, span.trace_id))
            if held is not None and self._held < HELD_SPANS:
                held[span.span_id] = span
                self._held += 1
        self._wake.set()

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self._poll)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.settle_due()
            except asyncio.CancelledError:
                raise
            except DATABASE_GONE_ERRORS as exc:  # a restart, a failover: one line a round
                log.warning("could not settle received traces: the database is away (%s)", exc)
            except Exception:  # the next round tries again; the spans wait in the table
                log.exception("could not settle received traces")

    async def settle_due(self) -> int:
        """Settle the traces woken for and the quiet ones, ``lanes`` at a time (the
        database appends one trace while Python maps the next); how many spans settled."""
        due, self._due, self._held = self._due, {}, 0
        quiet = await quiet_traces(self._store, self._quiet, 100)
        work = [(key, due[key]) for key in sorted(due)]
        work += [(key, {}) for key in quiet if key not in due]
        lanes = asyncio.Semaphore(self._lanes)

        async def settle(key: tuple[UUID, str], known: dict[str, ReceivedSpan]) -> int:
            async with lanes:
                return await settle_trace(self._store, key[0], key[1], known)

        settled = 0
        for key, outcome in zip(
            [key for key, _ in work],
            await asyncio.gather(*(settle(k, known) for k, known in work), return_exceptions=True),
            strict=True,
        ):
            if isinstance(outcome, BaseException):
                if isinstance(outcome, asyncio.CancelledError):
                    raise outcome
                # its spans wait in the table: the next rounds find it quiet and try again
                log.error("could not settle trace %s", key[1], exc_info=outcome)
            else:
                settled += outcome
        self.settled += settled
        return settled
