"""Sessions of a real store sent as OTLP/HTTP protobuf (app/interchange/otel/export.py): the
request a collector gets, read with OpenTelemetry's own classes; OTLP's retry rules; the same
ids when a session is sent again. (A third-party collector receives them in
tests/system/interchange.)"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from app.events import LlmCall, Message, Run, RunOutput, SessionCreated
from app.events.canonical import canonical_json
from app.events.llm import LlmResponse, LlmUsage
from app.interchange.otel.export import OtlpExportError, export_sessions, traces_endpoint
from app.store import EventStore


async def recorded(store: EventStore) -> uuid.UUID:
    session = uuid.uuid4()
    text = canonical_json({"role": "user", "content": "List the files."})
    hashes = [hashlib.sha256(text.encode()).hexdigest()]
    await store.put_messages(hashes, [text])
    await store.append(
        session,
        [
            SessionCreated(title="t", config={"agent": "codeact", "model": "openai/m"}),
            Message(content="List the files.", source="user"),
            LlmCall(
                model="openai/m",
                fingerprint="f",
                prompt=hashes,
                latency_ms=20.0,
                response=LlmResponse(content="ls", finish_reason="stop"),
                usage=LlmUsage(prompt_tokens=12, completion_tokens=3),
            ),
            Run(command="ls", cause=3),
            RunOutput(output="a.txt\n", exit_code=0, cause=4),
        ],
        expected_seq=0,
    )
    return session


def collector(
    answers: list[int], received: list[ExportTraceServiceRequest]
) -> Callable[[httpx.Request], httpx.Response]:
    """A collector answering each request with the next status of ``answers`` (200 after)."""

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/traces"
        assert request.headers["content-type"] == "application/x-protobuf"
        status = answers.pop(0) if answers else 200
        if status == 200:
            received.append(ExportTraceServiceRequest.FromString(request.content))
            body = ExportTraceServiceResponse().SerializeToString()
            return httpx.Response(200, content=body,
                                  headers={"content-type": "application/x-protobuf"})  # fmt: skip
        return httpx.Response(status, text="busy", headers={"retry-after": "0"})

    return handle


async def test_a_session_reaches_the_collector_as_one_trace_and_again_the_same(
    store: EventStore,
) -> None:
    session = await recorded(store)
    received: list[ExportTraceServiceRequest] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(collector([], received))) as client:
        report = await export_sessions(store, [session], client, "http://collector:4318")
        again = await export_sessions(store, [session], client, "http://collector:4318/v1/traces")
    assert (
        (report.sessions, report.spans, report.rejected)
        == (1, 3, 0)
        == (again.sessions, again.spans, again.rejected)
    )
    first, second = (request.resource_spans[0].scope_spans[0].spans for request in received)
    assert [span.name for span in first] == [
        "invoke_agent codeact",
        "chat openai/m",
        "execute_tool run",
    ]
    assert {span.trace_id for span in first} == {session.bytes}
    assert [s.SerializeToString() for s in first] == [s.SerializeToString() for s in second]
    attributes = {kv.key for kv in first[1].attributes}
    assert "gen_ai.usage.input_tokens" in attributes and "gen_ai.input.messages" not in attributes


async def test_contents_go_only_when_asked(store: EventStore) -> None:
    session = await recorded(store)
    received: list[ExportTraceServiceRequest] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(collector([], received))) as client:
        await export_sessions(store, [session], client, "http://collector", content=True)
    chat = received[0].resource_spans[0].scope_spans[0].spans[1]
    sent = {kv.key: kv.value.string_value for kv in chat.attributes}
    assert "List the files." in sent["gen_ai.input.messages"]
    assert '"content":"ls"' in sent["gen_ai.output.messages"]


async def test_retryable_answers_are_retried_and_others_are_one_error(store: EventStore) -> None:
    session = await recorded(store)
    received: list[ExportTraceServiceRequest] = []
    answers = [503, 429]
    async with httpx.AsyncClient(
        transport=httpx.MockTransport(collector(answers, received))
    ) as client:
        report = await export_sessions(store, [session], client, "http://collector")
        assert report.spans == 3 and len(received) == 1
        with pytest.raises(OtlpExportError, match="answered 400: busy"):
            await export_sessions(store, [session], httpx_client(400), "http://collector")


def httpx_client(status: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(collector([status], [])))


def test_the_endpoint_is_the_collectors_v1_traces() -> None:
    assert traces_endpoint("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_endpoint("https://h/otel/") == "https://h/otel/v1/traces"
    assert traces_endpoint("http://h:4318/v1/traces") == "http://h:4318/v1/traces"
    with pytest.raises(OtlpExportError, match="not an http"):
        traces_endpoint("h:4318")
