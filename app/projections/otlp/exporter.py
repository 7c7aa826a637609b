"""The live OTLP exporter: follows the whole log in global order and sends each event's spans
(``live.py``) to an OpenTelemetry collector as they are recorded, in one process at a time.

It keeps its position in ``projections`` (row ``otlp_export``) and holds that row's lock as
a projection runner does (``ProjectionConnection``): other processes stand by and take over
when the holder ends. A batch of events (those already read, at most ``MAX_SPANS``) becomes
one request; the position moves past the batch only once the collector has taken it. So
delivery is at least once: a process killed after the collector took a batch and before the
position moved sends that batch again on restart, with the same ids (they come from the
log), which a backend keeps once. The first start begins at the head of the log (what was
recorded before: ``chronicle export --otlp``).

A collector that cannot be reached, or answers what OTLP calls retryable (429, 502, 503,
504), or answers 401, 403, 404, 5xx or anything else that says the collector (its address,
its key) is wrong rather than the spans, is tried again with a growing pause (``Retry-After``
honoured, at most ``max_backoff``), for as long as it takes: nothing is skipped, the
position waits. Only the exporter waits: it has its own task and connection. A 400 or 413
says the spans themselves will never be taken: the batch is split in halves until the
spans refused are alone, and each of those is skipped, logged as an error and counted
(``skipped``); the rest is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx

from app.errors import ChronicleError
from app.projections.config import OtlpExportConfig, ProjectionsConfig
from app.projections.lock_holder import LockHolder
from app.projections.otlp.encoding import export_request
from app.projections.otlp.live import LiveSpans
from app.projections.otlp.spans import Span
from app.projections.otlp.transport import MAX_SPANS, attempt, traces_endpoint
from app.projections.sql.projection_store import (
    NewerVersionError,
    PositionMovedError,
    ProjectionConnection,
    runner_identity,
)
from app.store import (
    EventStore,
    GlobalSubscription,
    Position,
    RecordedEvent,
)

log = logging.getLogger(__name__)

#: Its row in ``projections`` (and the name of its lock): ``chronicle projections status``.
NAME = "otlp_export"
VERSION = 1
#: Statuses that say the spans themselves are refused (split, then skipped); every other
#: refusal is the collector's setup, tried again until it takes them.
SPANS_REFUSED = frozenset({400, 413})
#: A collector still failing is logged again at most this often (seconds).
LOG_EVERY = 60.0


class Stopped(ChronicleError):
    """Asked to stop while a batch was not yet taken (the position stays before it)."""


class OtlpExporter(LockHolder):
    """Sends the spans of the log to the collector while it holds ``otlp_export``'s lock;
    stands by while another process does. Its state, position and counters are for status
    and tests; ``run`` until ``stop()``. States: ``starting``, ``standby``, ``applying``,
    ``waiting for collector``, ``stopped``."""

    describe = "otlp export"
    standing_by = "another process sends the spans"

    def __init__(
        self,
        store: EventStore,
        config: OtlpExportConfig,
        projections: ProjectionsConfig | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if config.url is None:
            raise ValueError("the live OTLP exporter needs otlp_export_url")
        self.projections = projections or ProjectionsConfig()
        super().__init__(store, self.projections.standby_interval)
        self.config = config
        self.endpoint = traces_endpoint(config.url)
        self._transport = transport
        self._spans = LiveSpans(store, content=config.content)
        #: Spans the collector took; spans skipped (refused as spans, 400/413); spans the
        #: collector took but said it rejected (OTLP's partial success); tries that failed.
        self.sent = 0
        self.skipped = 0
        self.rejected = 0
        self.failed_tries = 0

    @property
    def name(self) -> str:
        return NAME

    async def _hold(self, connection: ProjectionConnection) -> None:
        checkpoint = await connection.register_at_head(NAME, VERSION)
        await connection.set_runner(NAME, runner_identity())
        if checkpoint.version > VERSION:
            raise NewerVersionError(NAME, checkpoint.version, VERSION)
        position = self.position = checkpoint.position
        self.state = "applying"
        log.info("otlp export: sending to %s from %s", self.endpoint, position)
        if not await connection.anything_after(position):
            self.caught_up.set()
        timeout = httpx.Timeout(self.config.timeout)
        async with httpx.AsyncClient(timeout=timeout, transport=self._transport) as client:
            try:
                await self._follow(connection, client, position)
            except PositionMovedError as moved:
                # another process moved it (it cannot while this one holds the lock): start
                # over from the stored position rather than skip or send twice silently
                log.warning("otlp export: %s; starting over", moved)
                self.caught_up.clear()

    async def _follow(
        self, connection: ProjectionConnection, client: httpx.AsyncClient, position: Position
    ) -> None:
        stopping: asyncio.Future[Any] = asyncio.ensure_future(self._stop.wait())
        size = min(self.projections.batch_size, MAX_SPANS)
        try:
            async with self.store.subscribe_all(start=position, auto_checkpoint=False) as events:
                while (batch := await _next_batch(events, stopping, size)) is not None:
                    self.caught_up.clear()
                    try:
                        position = await self._export(connection, client, position, batch)
                    except Stopped:
                        return
                    if not events.buffered():
                        self.caught_up.set()
        finally:
            stopping.cancel()
        # stopped: what is left, briefly (a collector that fails now is tried once)
        with contextlib.suppress(TimeoutError, Stopped):
            async with asyncio.timeout(self.projections.drain_timeout):
                while page := await self.store.read_all(after=position, limit=size):
                    position = await self._export(connection, client, position, page)

    async def _export(
        self,
        connection: ProjectionConnection,
        client: httpx.AsyncClient,
        position: Position,
        batch: Sequence[RecordedEvent],
    ) -> Position:
        """Send the batch's spans, then move the position past it; the new position."""
        spans = [span for event in batch for span in await self._spans.of(event)]
        await self._send(client, spans)
        self.position = await connection.advance(NAME, VERSION, position, batch[-1])
        return self.position

    async def _send(self, client: httpx.AsyncClient, spans: Sequence[Span]) -> None:
        """Until the collector has taken ``spans`` (or refused some as spans: skipped)."""
        if not spans:
            return
        body = export_request(spans).SerializeToString()
        pause, logged = 0.5, 0.0
        while True:
            answer = await attempt(client, self.endpoint, body, self.config.header_values())
            if answer.outcome == "taken":
                self._taken(spans, answer.response.partial_success)
                if logged:
                    log.warning("otlp export: the collector at %s takes spans again", self.endpoint)
                return
            if answer.outcome == "refused" and answer.status in SPANS_REFUSED:
                await self._refused(client, spans, answer.why)
                return
            self.failed_tries += 1
            self.state = "waiting for collector"
            now = time.monotonic()
            if now - logged >= LOG_EVERY:
                logged = now
                what = "refuses" if answer.outcome == "refused" else "is unavailable"
                log.error(
                    "otlp export: %s; the collector %s, %d spans wait (trying again, the "
                    "position stays until it takes them)",
                    answer.why, what, len(spans),
                )  # fmt: skip
            await self._pause(max(pause, answer.retry_after))
            if self._stop.is_set():
                raise Stopped
            pause = min(pause * 2, self.config.max_backoff)
            self.state = "applying"

    async def _refused(self, client: httpx.AsyncClient, spans: Sequence[Span], why: str) -> None:
        """The collector refused these spans as spans: send halves, skip a span refused alone."""
        if len(spans) == 1:
            span = spans[0]
            self.skipped += 1
            log.error(
                "otlp export: SKIPPED span %s %r of trace %s: %s (%d skipped so far)",
                span.span_id.hex(), span.name, span.trace_id.hex(), why, self.skipped,
            )  # fmt: skip
            return
        half = len(spans) // 2
        await self._send(client, spans[:half])
        await self._send(client, spans[half:])

    def _taken(self, spans: Sequence[Span], partial: Any) -> None:
        self.sent += len(spans)
        if partial.rejected_spans:
            self.rejected += partial.rejected_spans
            log.warning(
                "otlp export: the collector rejected %d of %d spans: %s",
                partial.rejected_spans, len(spans), partial.error_message or "(no reason given)",
            )  # fmt: skip


async def _next_batch(
    events: GlobalSubscription, stopping: asyncio.Future[Any], size: int
) -> list[RecordedEvent] | None:
    """The next event and those already read after it (at most ``size``); None once stopped
    (a cancelled ``__anext__`` loses nothing: the subscription's promise)."""
    following: asyncio.Future[RecordedEvent] = asyncio.ensure_future(anext(events))
    await asyncio.wait({following, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not following.done():
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        return None
    batch = [following.result()]
    while len(batch) < size and events.buffered():
        batch.append(await anext(events))
    return batch
