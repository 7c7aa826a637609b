"""Received spans settle into sessions in PostgreSQL (as the application's login): the same
session whatever order the spans came in, each span once however often it is sent, a
conversation's traces one session, and a trace larger than a page settled page by page."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from app.interchange.otel import receiving
from app.interchange.otel.received import ReceivedSpan
from app.interchange.otel.receiving import TraceSettler, receive, session_id_for, settle_trace
from app.interchange.sql import received_spans
from app.sessions.sql.session_owners import owner_of
from app.sessions.sql.users import add_user
from app.store import EventStore

SECOND = 1_000_000_000
START = 1_700_000_000 * SECOND


def trace_spans(
    trace: str, conversation: str | None = "conv-1", calls: int = 3
) -> list[ReceivedSpan]:
    """An agent's trace: a root invoke_agent, and per step a model call then its tool."""
    root = f"{1:016x}"
    conversation_attribute = {"gen_ai.conversation.id": conversation} if conversation else {}
    spans = [
        ReceivedSpan(
            trace_id=trace,
            span_id=root,
            name="invoke_agent helper",
            start_ns=START,
            end_ns=START + (calls + 1) * SECOND,
            attributes={"gen_ai.operation.name": "invoke_agent", **conversation_attribute},
            service="helper",
        )
    ]
    for step in range(calls):
        at = START + step * SECOND
        spans.append(
            ReceivedSpan(
                trace_id=trace,
                span_id=f"{100 + step:016x}",
                parent_span_id=root,
                name="chat m",
                start_ns=at + 1,
                end_ns=at + SECOND // 2,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "tool_call", "id": f"c{step}", "name": "ls"}],
                                "finish_reason": "tool_calls",
                            }
                        ]
                    ),
                    **conversation_attribute,
                },
                service="helper",
            )
        )
        spans.append(
            ReceivedSpan(
                trace_id=trace,
                span_id=f"{200 + step:016x}",
                parent_span_id=root,
                name="execute_tool ls",
                start_ns=at + SECOND // 2 + 1,
                end_ns=at + SECOND - 1,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "ls",
                    "gen_ai.tool.call.id": f"c{step}",
                },
                service="helper",
            )
        )
    return spans


def shape(events: list) -> list[tuple]:
    return [
        (e.seq, e.kind, e.cause, e.event_id, e.payload.get("imported", {}).get("id"))
        for e in events
    ]


async def test_the_session_is_the_same_whatever_order_the_spans_came_in(store: EventStore) -> None:
    user = await add_user(store, "ora")
    other = await add_user(store, "pat")
    spans = trace_spans("a" * 32)
    shuffled = spans[:]
    random.Random(7).shuffle(shuffled)
    # the same trace, by two users: in order in one request, shuffled over three for the other
    await receive(store, user.id, spans)
    for start in range(0, len(shuffled), 3):
        await receive(store, other.id, shuffled[start : start + 3])
    assert await settle_trace(store, user.id, "a" * 32) == len(spans)
    assert await settle_trace(store, other.id, "a" * 32) == len(spans)

    mine = session_id_for(user.id, conversation="conv-1", trace_id="a" * 32)
    theirs = session_id_for(other.id, conversation="conv-1", trace_id="a" * 32)
    assert mine != theirs
    first = await store.read(mine)
    second = await store.read(theirs)
    assert [(e.kind, e.cause) for e in first] == [(e.kind, e.cause) for e in second]
    assert [e.kind for e in first] == [
        "session.created",
        *["llm.call", "imported", "imported.output"] * 3,
        "otel.span",
        "agent.state",
    ]
    created = first[0].payload
    assert created["config"]["agent"] == "external" and created["config"]["source"] == "otlp"
    assert created["user"] == "ora"
    assert await owner_of(store, mine) == user.id
    assert first[2].cause == 2  # the tool's action answers the call that asked for it


async def test_a_span_sent_again_is_one_event(store: EventStore) -> None:
    user = await add_user(store, "quin")
    spans = trace_spans("b" * 32, calls=1)
    staged = await receive(store, user.id, spans)
    assert (staged.new, staged.again, staged.rooted) == (len(spans), 0, frozenset({"b" * 32}))
    await settle_trace(store, user.id, "b" * 32)
    session = session_id_for(user.id, conversation="conv-1", trace_id="b" * 32)
    before = shape(await store.read(session))
    again = await receive(store, user.id, spans)
    assert (again.new, again.again) == (0, len(spans))
    assert await settle_trace(store, user.id, "b" * 32) == 0
    assert shape(await store.read(session)) == before


async def test_a_conversations_traces_are_one_session_and_late_spans_follow(
    store: EventStore,
) -> None:
    user = await add_user(store, "rae")
    first, second = trace_spans("c" * 32, calls=1), trace_spans("d" * 32, calls=1)
    await receive(store, user.id, first[1:])  # the root comes late
    await settle_trace(store, user.id, "c" * 32)
    await receive(store, user.id, second)
    await settle_trace(store, user.id, "d" * 32)
    await receive(store, user.id, first[:1])
    await settle_trace(store, user.id, "c" * 32)
    session = session_id_for(user.id, conversation="conv-1", trace_id="c" * 32)
    kinds = [event.kind for event in await store.read(session)]
    assert kinds == [
        "session.created",
        "llm.call", "imported", "imported.output",  # trace c without its root
        "llm.call", "imported", "imported.output", "otel.span", "agent.state",  # trace d
        "otel.span", "agent.state",  # c's root, late
    ]  # fmt: skip
    # a trace of no conversation is a session of its own
    lone = trace_spans("e" * 32, conversation=None, calls=1)
    await receive(store, user.id, lone)
    await settle_trace(store, user.id, "e" * 32)
    assert len(await store.read(session_id_for(user.id, conversation=None, trace_id="e" * 32))) == 6


async def test_a_trace_larger_than_a_page_settles_page_by_page(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(receiving, "PAGE", 7)
    user = await add_user(store, "sol")
    spans = trace_spans("f" * 32, calls=20)  # 41 spans: 6 pages
    await receive(store, user.id, spans)
    assert await settle_trace(store, user.id, "f" * 32) == 41
    session = session_id_for(user.id, conversation="conv-1", trace_id="f" * 32)
    events = await store.read(session)
    assert len(events) == 1 + 20 * 3 + 2
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    # each tool's action is caused by the model call that asked for it, pages apart or not
    asked = {
        call["id"]: e.seq
        for e in events
        if e.kind == "llm.call"
        for call in e.payload["response"]["tool_calls"]
    }
    actions = [e for e in events if e.kind == "imported"]
    assert len(actions) == 20
    assert [e.cause for e in actions] == [asked[e.payload["tool_call_id"]] for e in actions]


async def test_a_tool_span_that_comes_after_its_call_settled_is_caused_by_it(
    store: EventStore,
) -> None:
    user = await add_user(store, "uma")
    spans = trace_spans("3" * 32, conversation="conv-3", calls=2)
    tools = [span for span in spans if span.name.startswith("execute_tool")]
    await receive(store, user.id, [span for span in spans if span not in tools])
    await settle_trace(store, user.id, "3" * 32)
    await receive(store, user.id, tools)  # late, in a request of their own
    assert await settle_trace(store, user.id, "3" * 32) == len(tools)
    session = session_id_for(user.id, conversation="conv-3", trace_id="3" * 32)
    events = await store.read(session)
    calls = {
        e.payload["response"]["tool_calls"][0]["id"]: e.seq for e in events if e.kind == "llm.call"
    }
    actions = [e for e in events if e.kind == "imported"]
    assert [(e.payload["tool_call_id"], e.cause) for e in actions] == [
        ("c0", calls["c0"]),
        ("c1", calls["c1"]),
    ]
    outputs = [e for e in events if e.kind == "imported.output"]
    assert [e.cause for e in outputs] == [e.seq for e in actions]


async def test_the_settler_settles_rooted_traces_at_once_and_the_rest_when_quiet(
    store: EventStore,
) -> None:
    user = await add_user(store, "tam")
    settler = TraceSettler(store, quiet_seconds=0.5, poll_seconds=0.1)
    rooted = trace_spans("1" * 32, calls=1)
    staged = await receive(store, user.id, rooted)
    settler.wake(user.id, staged.rooted)
    assert await settler.settle_due() == len(rooted)
    rootless = trace_spans("2" * 32, conversation="conv-2", calls=1)[1:]
    await receive(store, user.id, rootless)
    assert await settler.settle_due() == 0  # not quiet yet
    settler.start()
    try:
        session = session_id_for(user.id, conversation="conv-2", trace_id="2" * 32)
        for _ in range(100):
            if await store.last_seq(session):
                break
            await asyncio.sleep(0.1)
        assert [e.kind for e in await store.read(session)][-1] == "imported.output"
    finally:
        await settler.close()


async def test_odd_values_a_client_may_send_settle_as_sent(store: EventStore) -> None:
    """NUL in names and values, the largest int64, a NaN, an empty reply: stored and appended
    (the span's JSON goes to a bytea column: jsonb refuses a NUL)."""
    user = await add_user(store, "ula")
    trace = "9" * 32
    odd = ReceivedSpan(
        trace_id=trace,
        span_id=f"{7:016x}",
        name="chat \x00 m",
        start_ns=START,
        end_ns=START + SECOND,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m\x00",
            "gen_ai.usage.input_tokens": 2**63 - 1,
            "gen_ai.request.temperature": float("nan"),
            "gen_ai.output.messages": "[]",
            "x\x00": "\x00",
        },
    )
    await receive(store, user.id, [odd])
    assert await settle_trace(store, user.id, trace) == 1
    events = await store.read(session_id_for(user.id, conversation=None, trace_id=trace))
    call = events[-1].payload
    assert call["model"] == "m\x00"
    # beyond what a count may be: unknown, and kept as sent (past 2^53 as its text)
    assert call["usage"]["prompt_tokens"] is None and call["usage"]["total_tokens"] is None
    assert call["usage"]["as_sent"] == {"gen_ai.usage.input_tokens": str(2**63 - 1)}
    assert call["response"]["content"] is None


async def test_the_settler_takes_the_requests_spans_as_they_are_up_to_its_bound(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A woken trace's spans are not read back; past ``HELD_SPANS`` the rest are, and the
    session is the same either way."""
    read_back: list[bytes] = []
    real = received_spans.span_of

    def counted(raw: bytes) -> ReceivedSpan:
        read_back.append(raw)
        return real(raw)

    monkeypatch.setattr(received_spans, "span_of", counted)
    user = await add_user(store, "vic")
    sessions = []
    for trace, bound in (("4" * 32, 10_000), ("5" * 32, 2)):
        monkeypatch.setattr(receiving, "HELD_SPANS", bound)
        settler = TraceSettler(store, quiet_seconds=3600)
        spans = trace_spans(trace, conversation=f"conv-{trace[0]}", calls=3)
        staged = await receive(store, user.id, spans)
        settler.wake(user.id, staged.rooted, spans)
        read_back.clear()
        assert await settler.settle_due() == len(spans)
        assert len(read_back) == (0 if bound > len(spans) else len(spans) - bound)
        session = session_id_for(user.id, conversation=f"conv-{trace[0]}", trace_id=trace)
        sessions.append([(e.kind, e.cause) for e in await store.read(session)])
    assert sessions[0] == sessions[1]


async def test_a_span_sent_again_with_other_content_settles_as_first_stored(
    store: EventStore,
) -> None:
    """The settler holds only the spans a request stored: one stored before keeps its first
    copy (the table's), whatever a later request carried under the same id."""
    user = await add_user(store, "wes")
    first = trace_spans("6" * 32, conversation="conv-6", calls=1)
    await receive(store, user.id, first[1:])  # no root yet: nothing settles
    changed = [
        span.model_copy(update={"attributes": {**span.attributes, "gen_ai.request.model": "x"}})
        if span.name.startswith("chat")
        else span
        for span in first
    ]
    staged = await receive(store, user.id, changed)  # the root, and the rest again
    assert staged.stored_here(changed) == [changed[0]]
    settler = TraceSettler(store, quiet_seconds=3600)
    settler.wake(user.id, staged.rooted, staged.stored_here(changed))
    assert await settler.settle_due() == len(first)
    session = session_id_for(user.id, conversation="conv-6", trace_id="6" * 32)
    calls = [e for e in await store.read(session) if e.kind == "llm.call"]
    assert [call.payload["model"] for call in calls] == ["m"]
