"""The live OTLP exporter (app/projections/otlp/exporter.py) inside a real ``chronicle serve``,
configured as an operator does (``CHRONICLE_OTLP_EXPORT_URL``), against a local collector that
reads each request with OpenTelemetry's own classes (tests/support/otlp_collector.py).

Sessions recorded into the server's database reach the collector as they are recorded: a
``chat`` span per model call, an ``execute_tool`` span per tool action, and the session's
``invoke_agent`` span once the agent's end state is recorded, each with the span id of
``chronicle export --otlp``. A server killed (SIGKILL) while the collector holds a request
loses nothing: the next server on the same database sends from the stored position, so every
span arrives, the collector takes each once, and the only spans sent twice are those of the
batch whose answer never came. A collector answering 503 blocks neither the API nor the
projections, and gets every span once it answers 200 again.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from app.projections.otlp.exporter import NAME
from app.projections.otlp.ids import SESSION_SPAN, span_id, trace_id
from app.projections.sql.projection_status import ProjectionStatus, projection_status
from app.store import EventStore
from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.otlp_collector import Collector, running_collector
from tests.support.otlp_sessions import expected, record, session_events
from tests.support.postgres import PgServer
from tests.support.waiting import until

#: Seconds any one awaited condition may take (a loaded 2-core machine runs 3 workers).
DEADLINE = 30.0
#: The seq of each span's event in a ``session_events`` session: the two model calls (chat),
#: the tool action (execute_tool, sent when its output is recorded), the session itself.
CHATS, TOOL, END = (3, 6), 4, 7


@pytest.fixture
def collector() -> Iterator[Collector]:
    with running_collector() as server:
        yield server


def serve_environment(
    pg_server: PgServer, database_url: str, root: Path, collector: Collector, **settings: str
) -> dict[str, str]:
    """``chronicle serve``'s environment: the live exporter on, sending to ``collector``."""
    root.mkdir()
    return database_environment(
        pg_server, database_url, root,
        otlp_export_url=collector.url, otlp_export_max_backoff="0.2",
        projections_standby_interval="0.2", **settings,
    )  # fmt: skip


@asynccontextmanager
async def serving(env: dict[str, str]) -> AsyncIterator[ServerProcess]:
    """A ``chronicle serve`` process on ``env``'s database (stopped at the end if still up)."""
    server = await asyncio.to_thread(start_server, env)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            await asyncio.to_thread(server.stop)


async def exporter_status(store: EventStore) -> ProjectionStatus:
    [status] = await projection_status(store, [NAME])
    return status


async def exporting(store: EventStore, server: ServerProcess) -> None:
    """Until the server's exporter holds ``otlp_export`` (its first start registers it at the
    head of the log: what is recorded before is not sent)."""

    async def live() -> bool:
        assert server.process.poll() is None, server.rest_of_output()
        status = await exporter_status(store)
        return status.live and status.version is not None

    await until(live, timeout=DEADLINE, what="the server's exporter holds otlp_export")


async def exported_to_head(store: EventStore, server: ServerProcess) -> None:
    """Until the exporter's position is past every event recorded (the collector took them)."""

    async def at_head() -> bool:
        assert server.process.poll() is None, server.rest_of_output()
        return (await exporter_status(store)).behind == 0

    await until(at_head, timeout=DEADLINE, what="the exporter's position at the head of the log")


def spans_of(requests: Sequence[ExportTraceServiceRequest]) -> list[OtlpSpan]:
    return [s for r in requests for rs in r.resource_spans for ss in rs.scope_spans
            for s in ss.spans]  # fmt: skip


def by_id(spans: Sequence[OtlpSpan]) -> dict[bytes, OtlpSpan]:
    return {span.span_id: span for span in spans}


def of_session(spans: Sequence[OtlpSpan], session: uuid.UUID) -> list[OtlpSpan]:
    return [span for span in spans if span.trace_id == trace_id(session)]


def ids_arrived(collector: Collector, ids: set[bytes]) -> bool:
    return ids <= {span.span_id for span in collector.spans()}


async def test_a_served_log_reaches_the_collector_and_a_killed_server_resumes(
    pg_server: PgServer, database_url: str, store: EventStore, collector: Collector,
    tmp_path: Path,
) -> None:  # fmt: skip
    # contents on: after the restart a model call's whole prompt is read back from the log;
    # a request may take a minute, so the one the collector holds is never tried twice
    env = serve_environment(
        pg_server, database_url, tmp_path / "serve", collector,
        otlp_export_content="true", otlp_export_timeout="60",
    )  # fmt: skip
    async with serving(env) as first:
        await exporting(store, first)

        # one session, recorded in two appends: its calls and its tool run are sent as they
        # are recorded, its own span only once the agent's end state is
        one = uuid.uuid4()
        events = await session_events(store, one)
        await store.append(one, events[:-1], expected_seq=0)
        working = {span_id(one, seq) for seq in (*CHATS, TOOL)}
        await until(lambda: ids_arrived(collector, working), timeout=DEADLINE,
                    what="the spans of a session still working")  # fmt: skip
        await exported_to_head(store, first)
        sent = collector.spans()
        assert sorted(span.name for span in sent) == ["chat openai/m"] * 2 + ["execute_tool shell"]
        assert {span.span_id for span in sent} == working
        assert {span.trace_id for span in sent} == {trace_id(one)}
        await store.append(one, events[-1:], expected_seq=len(events) - 1)
        ended = span_id(one, SESSION_SPAN)
        await until(lambda: ids_arrived(collector, {ended}), timeout=DEADLINE,
                    what="the session's invoke_agent span")  # fmt: skip
        await exported_to_head(store, first)
        got = collector.spans()
        assert [span.name for span in got if span.span_id == ended] == ["invoke_agent codeact"]
        assert Counter(span.span_id for span in got) == Counter(working | {ended})
        assert by_id(got) == by_id(await expected(store, one, content=True))

        # the next session's first call is taken; its second call and end are the batch the
        # collector holds (unanswered) when the server is killed
        two = uuid.uuid4()
        events = await session_events(store, two)
        await store.append(two, events[:5], expected_seq=0)
        before_kill = {span_id(two, CHATS[0]), span_id(two, TOOL)}
        await until(lambda: ids_arrived(collector, before_kill), timeout=DEADLINE,
                    what="the first spans of the second session")  # fmt: skip
        await exported_to_head(store, first)
        collector.hang = True
        await store.append(two, events[5:], expected_seq=5)
        await until(lambda: bool(collector.hung), timeout=DEADLINE,
                    what="a request held by the collector")  # fmt: skip
        assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    [held] = collector.hung  # one request in flight at the kill, never answered
    in_flight = {span.span_id for span in spans_of([held])}
    assert in_flight == {span_id(two, CHATS[1]), span_id(two, SESSION_SPAN)}
    assert not ids_arrived(collector, in_flight) and (await exporter_status(store)).behind == 2
    assert "Traceback" not in first.rest_of_output(), first.rest_of_output()

    # recorded while no server runs; then a new server, as the collector lets go of the
    # dead request (it is never taken: the connection it came on is gone)
    three = await record(store)
    collector.hang = False
    async with serving(env) as second:
        collector.release.set()
        await exporting(store, second)
        sessions = (one, two, three)
        want = [span for s in sessions for span in await expected(store, s, content=True)]
        await until(lambda: ids_arrived(collector, set(by_id(want))), timeout=DEADLINE,
                    what="every span of the three sessions")  # fmt: skip
        await exported_to_head(store, second)
        assert second.stop() == 0
    assert "Traceback" not in second.rest_of_output(), second.rest_of_output()

    got = collector.spans()
    assert set(by_id(got)) == set(by_id(want))  # nothing missing, nothing else
    assert by_id(got) == by_id(want)  # ids, times, attributes, contents: the batch export's
    for session in sessions:
        names = Counter(span.name for span in of_session(got, session))
        assert names == {"chat openai/m": 2, "execute_tool shell": 1, "invoke_agent codeact": 1}
    # at least once, and nothing twice but the batch whose answer never came: the collector
    # took each span once (the held batch again, from the restarted server), and of all the
    # spans ever sent to it only the held batch's were sent twice
    assert all(n == 1 for n in Counter(span.span_id for span in got).values())
    assert in_flight <= set(by_id(got))
    sent_twice = {
        span for span, n in Counter(s.span_id for s in spans_of(collector.hung) + got).items()
        if n > 1
    }  # fmt: skip
    assert sent_twice == in_flight and len(collector.hung) == 1


async def test_a_collector_down_blocks_neither_the_api_nor_the_projections(
    pg_server: PgServer, database_url: str, store: EventStore, collector: Collector,
    tmp_path: Path,
) -> None:  # fmt: skip
    env = serve_environment(pg_server, database_url, tmp_path / "serve", collector)
    async with serving(env) as server:
        await exporting(store, server)
        token = await asyncio.to_thread(server.token, "root", admin=True)
        collector.status = 503
        sessions = [await record(store) for _ in range(2)]
        await until(lambda: collector.tries >= 3, timeout=DEADLINE,
                    what="the exporter trying the collector again")  # fmt: skip

        async with httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=DEADLINE
        ) as api:

            async def finished() -> bool:
                states = [(await api.get(f"/api/sessions/{s}")).json() for s in sessions]
                return all(state.get("state") == "finished" for state in states)

            # the API answers and the projections go on while the spans wait
            await until(finished, timeout=DEADLINE, what="the sessions finished in the API")
            assert (await api.get("/health/live")).status_code == 200
            ready = await api.get("/health/ready")
            assert ready.status_code == 200, ready.text
            state, otlp = await projection_status(store, ["session_state", NAME])
            assert state.behind == 0 and state.live
            assert otlp.live and otlp.behind > 0
            later = await record(store)  # the log still takes sessions
            sessions.append(later)
            await until(finished, timeout=DEADLINE, what="a session recorded meanwhile")
            assert collector.status == 503 and not collector.received

            collector.status = 200
            want = [span for s in sessions for span in await expected(store, s, content=False)]
            await until(lambda: ids_arrived(collector, set(by_id(want))), timeout=DEADLINE,
                        what="every span once the collector is up")  # fmt: skip
            await exported_to_head(store, server)
            assert (await api.get("/health/ready")).status_code == 200
    got = collector.spans()
    assert Counter(span.span_id for span in got) == Counter(span.span_id for span in want)
    assert by_id(got) == by_id(want)
    assert "Traceback" not in server.rest_of_output(), server.rest_of_output()
