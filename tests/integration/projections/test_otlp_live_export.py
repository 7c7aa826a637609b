"""The live OTLP exporter (app/projections/otlp/exporter.py) against the real PostgreSQL and a
local OTLP/HTTP collector that reads each request with OpenTelemetry's own classes: the spans
arrive once, with the ids and attributes of ``chronicle export --otlp``; a restart resumes
re-sending at most the batch the collector was not heard to take; a collector that is down
gets everything once it is up, while session_state stays current; spans refused with 400 are
skipped alone; one process sends at a time."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from app.projections import ProjectionsConfig, SessionState, running_projections
from app.projections.config import OtlpExportConfig
from app.projections.otlp.exporter import NAME, OtlpExporter
from app.projections.sql.projection_status import projection_status
from app.store import EventStore
from tests.support.otlp_collector import Collector, running_collector
from tests.support.otlp_sessions import expected, record

QUICK = ProjectionsConfig(standby_interval=0.1, batch_size=50, drain_timeout=2.0)


@pytest.fixture
def collector() -> Iterator[Collector]:
    with running_collector() as server:
        yield server


def config(collector: Collector, *, content: bool = False) -> OtlpExportConfig:
    return OtlpExportConfig(
        url=collector.url, content=content, timeout=5.0, max_backoff=0.2,
        headers={"x-api-key": "k1"},  # type: ignore[dict-item]
    )  # fmt: skip


async def until(check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.05)


async def exported_to_head(exporter: OtlpExporter, store: EventStore) -> None:
    async def at_head() -> bool:
        [status] = await projection_status(store, [NAME])
        return status.behind == 0 and exporter.caught_up.is_set()

    async with asyncio.timeout(30):
        while not await at_head():
            await asyncio.sleep(0.05)


def by_id(spans: list[OtlpSpan]) -> dict[bytes, OtlpSpan]:
    return {span.span_id: span for span in spans}


async def test_spans_arrive_once_with_the_batch_exports_ids_and_attributes(
    store: EventStore, collector: Collector
) -> None:
    exporting = config(collector, content=True)
    async with running_projections(store, [SessionState()], QUICK, otlp=exporting) as runners:
        exporter = runners[-1]
        assert isinstance(exporter, OtlpExporter)
        await until(exporter.caught_up.is_set)
        sessions = [await record(store), await record(store, end="error")]
        await exported_to_head(exporter, store)
    want = [span for s in sessions for span in await expected(store, s, content=True)]
    got = collector.spans()
    assert Counter(span.span_id for span in got) == Counter(span.span_id for span in want)
    assert by_id(got) == by_id(want)  # the same spans: ids, times, attributes, status
    assert any(kv.key == "gen_ai.input.messages" for s in got for kv in s.attributes)
    assert exporter.sent == len(want) and exporter.skipped == 0


async def test_what_was_recorded_before_the_first_start_is_not_sent(
    store: EventStore, collector: Collector
) -> None:
    before = await record(store)
    async with running_projections(store, [], QUICK, otlp=config(collector)) as [exporter]:
        assert isinstance(exporter, OtlpExporter)
        await until(exporter.caught_up.is_set)
        after = await record(store)
        await exported_to_head(exporter, store)
    traces = {span.trace_id for span in collector.spans()}
    assert traces == {after.bytes} and before.bytes not in traces


async def test_a_restart_resumes_resending_at_most_the_batch_not_heard_taken(
    store: EventStore, collector: Collector
) -> None:
    first = OtlpExporter(store, config(collector), QUICK)
    running = asyncio.create_task(first.run())
    await until(first.caught_up.is_set)
    one = await record(store)
    await exported_to_head(first, store)
    collector.hang = True
    two = await record(store)
    await until(lambda: bool(collector.hung))
    running.cancel()  # killed while the collector holds the batch: taken or not, unknown
    await asyncio.gather(running, return_exceptions=True)
    collector.hang = False
    collector.release.set()
    three = await record(store)

    second = OtlpExporter(store, config(collector), QUICK)
    running = asyncio.create_task(second.run())
    try:
        await exported_to_head(second, store)
    finally:
        second.stop()
        await running
    want = [span for s in (one, two, three) for span in await expected(store, s, content=False)]
    got = collector.spans()
    assert set(by_id(got)) == set(by_id(want))  # nothing lost
    assert by_id(got) == by_id(want)
    hung = {s.span_id for rs in collector.hung[0].resource_spans
            for ss in rs.scope_spans for s in ss.spans}  # fmt: skip
    assert hung and hung <= set(by_id(got))  # the batch whose answer never came: sent again
    assert all(n == 1 for n in Counter(s.span_id for s in got).values())  # the rest: once


async def test_a_collector_down_then_up_gets_everything_and_projections_go_on(
    store: EventStore, collector: Collector
) -> None:
    collector.status = 503
    async with running_projections(
        store, [SessionState()], QUICK, otlp=config(collector)
    ) as runners:
        exporter = runners[-1]
        assert isinstance(exporter, OtlpExporter)
        await until(exporter.caught_up.is_set)
        sessions = [await record(store) for _ in range(3)]
        await until(lambda: collector.tries >= 3)

        async def state_current() -> bool:
            state, otlp = await projection_status(store, ["session_state", NAME])
            return state.behind == 0 and otlp.behind > 0

        async with asyncio.timeout(30):
            while not await state_current():
                await asyncio.sleep(0.05)
        assert exporter.state == "waiting for collector" and not collector.received
        collector.status = 200
        await exported_to_head(exporter, store)
    want = [span for s in sessions for span in await expected(store, s, content=False)]
    assert Counter(s.span_id for s in collector.spans()) == Counter(s.span_id for s in want)
    assert exporter.failed_tries >= 3


async def test_spans_the_collector_refuses_as_spans_are_skipped_alone(
    store: EventStore, collector: Collector
) -> None:
    collector.refuse = "execute_tool shell"
    async with running_projections(store, [], QUICK, otlp=config(collector)) as [exporter]:
        assert isinstance(exporter, OtlpExporter)
        await until(exporter.caught_up.is_set)
        sessions = [await record(store) for _ in range(2)]
        await exported_to_head(exporter, store)
    want = [span for s in sessions for span in await expected(store, s, content=False)]
    kept = [span for span in want if span.name != "execute_tool shell"]
    assert by_id(collector.spans()) == by_id(kept)
    assert exporter.skipped == len(want) - len(kept) == 2


async def test_one_process_sends_the_others_stand_by(
    store: EventStore, collector: Collector
) -> None:
    first = OtlpExporter(store, config(collector), QUICK)
    second = OtlpExporter(store, config(collector), QUICK)
    tasks = [asyncio.create_task(first.run()), asyncio.create_task(second.run())]
    try:
        await until(lambda: {first.state, second.state} == {"applying", "standby"})
        [status] = await projection_status(store, [NAME])
        assert status.live
        session = await record(store)
        sending = first if first.state == "applying" else second
        await exported_to_head(sending, store)
        sending.stop()
        await until(lambda: "applying" in {first.state, second.state} and sending.ended.is_set())
    finally:
        first.stop()
        second.stop()
        await asyncio.gather(*tasks)
    assert Counter(s.span_id for s in collector.spans()) == Counter(
        s.span_id for s in await expected(store, session, content=False)
    )
