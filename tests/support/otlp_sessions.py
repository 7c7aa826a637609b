"""A small recorded session for the live OTLP exporter's tests, and the spans the batch
export sends for a session (what the exporter must send too)."""

from __future__ import annotations

import hashlib
import uuid

from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from app.events import AgentState, Event, LlmCall, Message, Run, RunOutput, SessionCreated
from app.events.canonical import canonical_json
from app.events.llm import LlmResponse, LlmUsage, ToolCall
from app.interchange.otel.export import session_trace
from app.projections.otlp.encoding import export_request
from app.store import EventStore


async def session_events(
    store: EventStore, session: uuid.UUID, *, end: str = "finished"
) -> list[Event]:
    """A session of two model calls (the second keeps the first's prompt), a tool run and its
    output, and an ``end`` state; the prompts' messages stored first."""
    texts = [
        canonical_json({"role": "user", "content": f"List the files {session}."}),
        canonical_json({"role": "tool", "content": "a.txt", "tool_call_id": "c1"}),
    ]
    hashes = [hashlib.sha256(text.encode()).hexdigest() for text in texts]
    await store.put_messages(hashes, texts)
    return [
        SessionCreated(title="t", config={"agent": "codeact", "model": "openai/m"}),
        Message(content="List the files.", source="user"),
        LlmCall(
            model="openai/m", fingerprint="f", prompt=hashes[:1], latency_ms=20.0,
            response=LlmResponse(tool_calls=[ToolCall(id="c1", name="shell",
                                                      arguments='{"command": "ls"}')],
                                 finish_reason="tool_calls"),
            usage=LlmUsage(prompt_tokens=12, completion_tokens=3),
        ),
        Run(command="ls", cause=3, tool_call_id="c1"),
        RunOutput(output="a.txt\n", exit_code=0, cause=4),
        LlmCall(
            model="openai/m", fingerprint="f", prompt=hashes[1:], prompt_kept=1,
            latency_ms=10.0, response=LlmResponse(content="a.txt", finish_reason="stop"),
            usage=LlmUsage(prompt_tokens=20, completion_tokens=2),
        ),
        AgentState(state=end, reason="done"),  # type: ignore[arg-type]
    ]  # fmt: skip


async def record(store: EventStore, *, end: str = "finished") -> uuid.UUID:
    """A whole ``session_events`` session, in one append."""
    session = uuid.uuid4()
    await store.append(session, await session_events(store, session, end=end), expected_seq=0)
    return session


async def expected(store: EventStore, session: uuid.UUID, *, content: bool) -> list[OtlpSpan]:
    """The spans ``chronicle export --otlp`` sends for the session, as the collector reads them."""
    spans = await session_trace(store, session, content=content)
    return list(export_request(spans).resource_spans[0].scope_spans[0].spans)
