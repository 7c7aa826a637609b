"""`chronicle bench otlp`: sessions out as OTLP traces, and OTLP traces in as sessions.

A throwaway database holds ``SESSIONS`` recorded sessions of ``STEPS`` steps each (a model
call with its prompt, a command, its output): ``SESSIONS * (2 * STEPS + 1)`` spans.

1. **Export** (``chronicle export --otlp``'s own work, without the network): each session read
   from the store with its prompts' messages, mapped to spans (``session_trace``, contents
   included) and encoded as OTLP's protobuf request; spans a second. The baseline: the same
   requests, already built, serialised by protobuf (``SerializeToString``). Target: >= 20,000
   spans/s.
2. **Ingest** (``POST /v1/traces``'s work, without HTTP): the exported requests' bytes decoded
   (``decode``), stored (``receive``) one request after the other, and settled into sessions
   by the server's ``TraceSettler`` running beside them (events appended, prompts stored), as
   a new user each round so every round does all of it; spans a second, to the last settled.
   The baseline: the same bytes parsed by protobuf (``FromString``). Target: >= 10,000
   spans/s.

Rounds alternate baseline and Chronicle (``bench.harness.interleave``); medians reported.

    python -m bench.otlp [--rounds N] [--only export ingest] [--url URL] [--json]
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench.harness import (
    BenchDatabase,
    Measurement,
    bench_arguments,
    command_line,
    interleave,
    measured_on_database,
    report,
)

SESSIONS = 20
STEPS = 250
#: Target spans a second (issue 26).
EXPORT_TARGET = 20_000
INGEST_TARGET = 10_000


async def record_sessions(store: object) -> list[uuid.UUID]:
    """``SESSIONS`` sessions of ``STEPS`` steps, each model call's prompt one message longer."""
    from app.events import LlmCall, LlmResponse, LlmUsage, Message, Run, RunOutput, SessionCreated
    from app.events import ToolCall as EventToolCall
    from app.llm.fingerprint import content_hash
    from app.store import EventStore

    assert isinstance(store, EventStore)
    sessions = []
    for _ in range(SESSIONS):
        session = uuid.uuid4()
        messages = {
            content_hash(m): m
            for m in (
                {"role": "system", "content": "You are a coding agent. " * 20},
                {"role": "user", "content": "Fix the failing test in calc.py."},
            )
        }
        prompt = list(messages)
        events: list[object] = [
            SessionCreated(config={"model": "openai/gpt-4o", "agent": "codeact"}),
            Message(content="Fix the failing test in calc.py."),
        ]
        for step in range(STEPS):
            seq = len(events) + 1
            call_id = f"call_{step}"
            events.append(
                LlmCall(
                    model="openai/gpt-4o",
                    fingerprint=f"{step:064x}",
                    prompt=prompt,
                    prompt_kept=None,
                    response=LlmResponse(
                        content=f"Step {step}: running the tests.",
                        tool_calls=[
                            EventToolCall(
                                id=call_id,
                                name="execute_bash",
                                arguments='{"command": "python -m pytest -q"}',
                            )
                        ],
                        finish_reason="tool_calls",
                        id=f"chatcmpl-{step}",
                    ),
                    usage=LlmUsage(prompt_tokens=1200 + step, completion_tokens=40),
                    latency_ms=800.0,
                )
            )
            events.append(Run(command="python -m pytest -q", tool_call_id=call_id, cause=seq))
            events.append(RunOutput(output="1 failed, 3 passed\n" * 3, exit_code=1, cause=seq + 1))
            result = {"role": "tool", "tool_call_id": call_id, "content": "1 failed"}
            key = content_hash(result)
            messages[key] = result
            prompt = [*prompt, key]
        from app.events import canonical_json

        texts = {key: canonical_json(value) for key, value in messages.items()}
        await store.put_messages(list(texts), list(texts.values()))
        for start in range(0, len(events), 500):
            await store.append(session, events[start : start + 500])  # type: ignore[arg-type]
        sessions.append(session)
    return sessions


async def measure(database: BenchDatabase, rounds: int, only: set[str]) -> list[Measurement]:
    from app.events.masking import SecretMasker
    from app.interchange.otel.export import session_trace
    from app.interchange.otel.received import decode
    from app.interchange.otel.receiving import TraceSettler, receive
    from app.projections.otlp.encoding import export_request
    from app.sessions.sql.users import add_user
    from app.store import EventStore

    rows: list[Measurement] = []
    async with await EventStore.open(database.app, masker=SecretMasker({})) as store:
        sessions = await record_sessions(store)
        requests = [export_request(await session_trace(store, s, content=False)) for s in sessions]
        spans = sum(len(r.resource_spans[0].scope_spans[0].spans) for r in requests)
        bodies = [request.SerializeToString() for request in requests]

        async def raw_encode() -> float:
            started = time.perf_counter()
            for request in requests:
                request.SerializeToString()
            return spans / (time.perf_counter() - started)

        async def chronicle_export() -> float:
            started = time.perf_counter()
            count = 0
            for session in sessions:
                trace = await session_trace(store, session, content=False)
                export_request(trace).SerializeToString()
                count += len(trace)
            return count / (time.perf_counter() - started)

        async def raw_decode() -> float:
            started = time.perf_counter()
            for body in bodies:
                ExportTraceServiceRequest.FromString(body)
            return spans / (time.perf_counter() - started)

        async def chronicle_ingest() -> float:
            """What ``POST /v1/traces`` and the server's settler do: each request decoded
            (in a thread), stored and answered, its trace settled by a settler running
            beside the requests as the server's does; timed to the last span settled."""
            user = await add_user(store, f"bench-{uuid.uuid4().hex[:12]}")
            settler = TraceSettler(store, quiet_seconds=3600)
            woken = asyncio.Event()  # the settler's loop, as TraceSettler._run waits

            async def settling() -> None:
                while settler.settled < spans:
                    await woken.wait()
                    woken.clear()
                    await settler.settle_due()

            started = time.perf_counter()
            settled = asyncio.create_task(settling())
            for body in bodies:
                received = await asyncio.to_thread(decode, body, "application/x-protobuf")
                staged = await receive(store, user.id, received)
                settler.wake(user.id, staged.rooted, staged.stored_here(received))
                woken.set()
            await settled
            return settler.settled / (time.perf_counter() - started)

        if "export" in only:
            result = await interleave(raw_encode, chronicle_export, rounds=rounds, warmup=1)
            rows.append(_row("export: read, map, encode", result, EXPORT_TARGET, spans))
        if "ingest" in only:
            result = await interleave(raw_decode, chronicle_ingest, rounds=rounds, warmup=1)
            rows.append(_row("ingest: decode, store, settle", result, INGEST_TARGET, spans))
    return rows


def _row(name: str, result: object, target: int, spans: int) -> Measurement:
    from bench.harness import Interleaved, _range

    assert isinstance(result, Interleaved)
    return Measurement(
        name=name,
        unit="spans/s",
        baseline=result.baseline.median,
        chronicle=result.chronicle.median,
        ratio=result.ratio,
        target=f">= {target:,} spans/s",
        met=result.chronicle.median >= target,
        baseline_spread=_range(result.baseline.low, result.baseline.high),
        chronicle_spread=_range(result.chronicle.low, result.chronicle.high),
        ratio_spread=f"{result.ratio_low:.4f}-{result.ratio_high:.4f}",
        detail={
            "spans": spans,
            "rounds": len(result.ratios),
            "baseline_samples": result.baseline.values,
            "chronicle_samples": result.chronicle.values,
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, rounds=5, figures=["export", "ingest"])
    args = parser.parse_args(argv)
    only = set(args.only or ["export", "ingest"])

    async def run(database: BenchDatabase) -> list[Measurement]:
        return await measure(database, args.rounds, only)

    machine, rows = measured_on_database(args.url, run)
    return report(
        "otlp",
        "OTLP: sessions exported as traces and traces ingested as sessions (spans a second), "
        "against protobuf's own encode and decode of the same requests",
        rows,
        as_json=args.json,
        machine=machine,
        how=command_line("otlp", args),
        extra={"sessions": SESSIONS, "steps": STEPS, "load": os.getloadavg()},
    )


if __name__ == "__main__":
    sys.exit(main())
