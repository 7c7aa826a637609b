"""The scale benchmark's generated sessions: the shape of a real one, the same every time, and
exactly the size asked."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import date

import pytest

from app.events import Action, Observation
from app.events.prompts import whole_prompts
from app.store.archive.loader import EVENTS_PER_CALL
from app.store.config import StoreConfig
from bench.scale_load import import_rows, months_spanned
from bench.scale_shape import FIXED_EVENTS, Shape, generate_session

SHAPE = Shape(sessions=60, events=6_000)


@pytest.mark.parametrize(
    ("sessions", "events"),
    [(60, 6_000), (61, 6_100), (7, 1_003), (3, 20), (10_000, 1_000_000), (5, 31)],
)
def test_sessions_add_up_to_the_events_asked(sessions: int, events: int) -> None:
    shape = Shape(sessions=sessions, events=events)
    lengths = [shape.session_length(i) for i in range(sessions)]
    assert sum(lengths) == events
    assert min(lengths) >= FIXED_EVENTS
    if events // sessions >= 60:
        assert len(set(lengths)) > 1  # not every session the same length


def test_a_session_is_always_the_same() -> None:
    first, again = generate_session(SHAPE, 7), generate_session(SHAPE, 7)
    assert first.session_id == again.session_id
    assert [e.payload() for e in first.events] == [e.payload() for e in again.events]
    assert [e.event_id for e in first.events] == [e.event_id for e in again.events]
    assert first.times == again.times
    assert generate_session(SHAPE, 8).session_id != first.session_id


def test_a_session_reads_like_an_agent_at_work() -> None:
    for index in range(SHAPE.sessions):
        session = generate_session(SHAPE, index)
        kinds = [event.kind for event in session.events]
        assert len(kinds) == SHAPE.session_length(index)
        assert kinds[:3] == ["session.created", "message", "agent.state"]
        assert kinds[-2:] == ["finish", "agent.state"]
        assert session.events[-1].state == "finished"
        assert kinds.count("llm.call") >= (len(kinds) - FIXED_EVENTS) // 3
        for seq, event in enumerate(session.events, start=1):
            if isinstance(event, Observation):
                assert isinstance(session.events[event.cause - 1], Action)
                assert event.cause == seq - 1
            elif isinstance(event, Action):
                assert session.events[event.cause - 1].kind == "llm.call"
        assert session.times == sorted(session.times)
        assert len(set(session.times)) == len(session.times)


def test_every_prompt_message_a_call_names_is_in_the_session() -> None:
    session = generate_session(SHAPE, 3)
    calls = [e.payload() for e in session.events if e.kind == "llm.call"]
    prompts = list(whole_prompts(calls))
    assert [len(p) for p in prompts] == [2 + 2 * n for n in range(len(calls))]
    for prompt, call in zip(prompts, calls, strict=True):
        assert set(prompt) | {call["tools"]} <= set(session.messages)
        assert call["usage"]["prompt_tokens"] > 0 and call["cost_usd"] > 0


def test_event_ids_are_uuid7_of_their_time() -> None:
    session = generate_session(SHAPE, 1)
    for event, moment in zip(session.events, session.times, strict=True):
        assert event.event_id.version == 7
        assert event.event_id.int >> 80 == int(moment.timestamp() * 1000)
    assert session.session_id.version == 4


def test_sessions_start_in_order_over_the_span_and_are_shared_by_the_members() -> None:
    starts = [generate_session(SHAPE, i).times[0] for i in range(SHAPE.sessions)]
    assert starts == sorted(starts)
    assert SHAPE.start <= starts[0] and starts[-1] < SHAPE.start + SHAPE.span
    owners = Counter(generate_session(SHAPE, i).owner for i in range(SHAPE.sessions))
    assert owners == dict.fromkeys(range(SHAPE.members), SHAPE.sessions // SHAPE.members)


def test_about_a_third_of_the_sessions_have_one_blob() -> None:
    config = StoreConfig()
    shape = Shape(sessions=150, events=150 * 30)
    with_blob = 0
    for index in range(shape.sessions):
        _, blobs = import_rows(generate_session(shape, index), config)
        assert len(blobs) <= 1
        with_blob += len(blobs)
        for text in blobs.values():
            assert len(text.encode()) > config.blob_threshold_bytes
    assert 0.2 * shape.sessions <= with_blob <= 0.45 * shape.sessions


def test_import_rows_are_calls_of_consecutive_seqs_with_a_hash_each() -> None:
    shape = Shape(sessions=1, events=EVENTS_PER_CALL * 2 + 7)
    session = generate_session(shape, 0)
    calls, _ = import_rows(session, StoreConfig())
    assert [len(call[1]) for call in calls] == [EVENTS_PER_CALL, EVENTS_PER_CALL, 7]
    seqs = [seq for call in calls for seq in call[1]]
    assert seqs == list(range(1, shape.events + 1))
    hashes = [h for call in calls for h in call[9]]
    assert len(set(hashes)) == len(hashes) and all(len(h) == 32 for h in hashes)
    assert all(call[0] == session.session_id for call in calls)
    assert [uuid.UUID(str(i)) for call in calls for i in call[2]] == [
        e.event_id for e in session.events
    ]


def test_months_spanned_counts_both_ends() -> None:
    assert months_spanned(date(2026, 9, 1), date(2026, 10, 30)) == 2
    assert months_spanned(date(2026, 9, 15), date(2026, 9, 16)) == 1
    assert months_spanned(date(2026, 11, 1), date(2027, 2, 1)) == 4
