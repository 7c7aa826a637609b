"""The gateway's calls for a replay session (``chronicle record --replay``): served from the
recording in order, no model called, and a request past the recording refused in the
agent's protocol, with the refusal recorded. Real PostgreSQL and the fake model (which
records the calls first)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.external.calls import ChatRequest, ExternalCalls
from app.external.errors import GatewayError
from app.external.replay_serving import DIVERGED, DIVERGED_CODE
from app.external.sessions import external_session
from app.store import DatabaseUnavailableError, EventStore
from tests.support.fake_llm import FakeLlmServer, Reply


def _settings(tmp_path: Path, fake_llm: FakeLlmServer, **more: Any) -> Settings:
    return Settings.model_validate(
        {
            "data_dir": tmp_path / "data",
            "llm_model": "openai/scripted",
            "llm_base_url": fake_llm.base_url,
            "llm_api_key": "sk-test",
            "llm_retries": 0,
            **more,
        }
    )


def _request(question: str, *, stream: bool = False) -> ChatRequest:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": question},
    ]
    return ChatRequest(model="scripted", messages=messages, stream=stream)


async def _replay_of(store: EventStore, recording: uuid.UUID) -> uuid.UUID:
    replay = uuid.uuid4()
    created = external_session(
        title="replay", user="u", user_agent=None, extra={"replay_of": str(recording)}
    )
    await store.append(replay, [created])
    return replay


async def test_a_replay_session_is_served_in_order_and_refused_past_its_recording(
    store: EventStore, tmp_path: Path, fake_llm: FakeLlmServer
) -> None:
    settings = _settings(tmp_path, fake_llm)
    recording = uuid.uuid4()
    await store.append(recording, [external_session(title="r", user="u", user_agent=None)])
    fake_llm.script(Reply(content="one"), Reply(content="two"))
    live = ExternalCalls(store, settings)
    for question in ("first?", "second?"):
        await live.complete(recording, _request(question))
    asked = len(fake_llm.requests)

    calls = ExternalCalls(store, settings)  # another process of the gateway, say
    replay = await _replay_of(store, recording)
    first = await calls.complete(replay, _request("first?"))
    await calls.close()  # shut down: what it served is written
    calls = ExternalCalls(store, settings)  # restarted: goes on where the replay's log says
    stream = calls.stream(replay, _request("second?", stream=True))
    chunks = [chunk async for chunk in stream]
    await stream.ended()

    assert first.content == "one"
    assert stream.reply is not None and stream.reply.content == "two"
    streamed = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
    )
    assert streamed == "two"
    assert len(fake_llm.requests) == asked  # no model called
    with pytest.raises(GatewayError) as refused:
        await calls.complete(replay, _request("third?"))
    assert (refused.value.status, refused.value.code) == (400, DIVERGED_CODE)
    assert "model call 3: the agent asked the model again, but the recording has only 2" in (
        refused.value.message
    )
    with pytest.raises(GatewayError):  # stopped: every later request is refused too
        await calls.complete(replay, _request("first?"))
    recorded = [e for e in await store.read(recording) if e.kind == "llm.call"]
    served = [e.payload for e in await store.read(replay) if e.kind == "llm.call"]
    assert [p.get("replayed_from") for p in served] == [e.seq for e in recorded] + [None]
    assert [p["fingerprint"] for p in served[:2]] == [e.payload["fingerprint"] for e in recorded]
    assert served[1]["params"]["stream"] is True
    assert (served[2]["error_kind"], served[2]["cost_usd"]) == (DIVERGED, 0.0)
    assert len(fake_llm.requests) == asked


async def test_a_call_a_limit_refused_is_refused_again_as_recorded(
    store: EventStore, tmp_path: Path, fake_llm: FakeLlmServer
) -> None:
    """Served from the recording before any limit: the replay's served call does not count
    against the cap, and the recorded refusal answers the agent as it did."""
    settings = _settings(tmp_path, fake_llm, gateway_limits={"session": {"max_calls": 1}})
    recording = uuid.uuid4()
    await store.append(recording, [external_session(title="r", user="u", user_agent=None)])
    fake_llm.script(Reply(content="one"))
    live = ExternalCalls(store, settings)
    await live.complete(recording, _request("first?"))
    with pytest.raises(GatewayError) as recorded:
        await live.complete(recording, _request("second?"))
    asked = len(fake_llm.requests)

    calls = ExternalCalls(store, settings)
    replay = await _replay_of(store, recording)
    assert (await calls.complete(replay, _request("first?"))).content == "one"
    with pytest.raises(GatewayError) as again:
        await calls.complete(replay, _request("second?"))

    assert (again.value.status, again.value.code) == (recorded.value.status, recorded.value.code)
    assert again.value.message == recorded.value.message
    assert len(fake_llm.requests) == asked


async def _recorded(store: EventStore, settings: Settings, fake_llm: FakeLlmServer) -> uuid.UUID:
    """A recording of three calls (``first?``, ``second?``, ``third?``)."""
    recording = uuid.uuid4()
    await store.append(recording, [external_session(title="r", user="u", user_agent=None)])
    fake_llm.script(Reply(content="one"), Reply(content="two"), Reply(content="three"))
    live = ExternalCalls(store, settings)
    for question in ("first?", "second?", "third?"):
        await live.complete(recording, _request(question))
    return recording


def _held_appends(
    store: EventStore, monkeypatch: pytest.MonkeyPatch, session_id: uuid.UUID
) -> tuple[asyncio.Event, list[int]]:
    """The store's appends to ``session_id`` held until the event is set; the number of
    events of each, as they were asked for."""
    gate, sizes = asyncio.Event(), []
    append = store.append

    async def held(session: uuid.UUID, events: Any, **options: Any) -> Any:
        if session == session_id:
            events = list(events)
            sizes.append(len(events))
            await gate.wait()
        return await append(session, events, **options)

    monkeypatch.setattr(store, "append", held)
    return gate, sizes


async def test_served_calls_are_answered_first_and_appended_behind_in_order(
    store: EventStore, tmp_path: Path, fake_llm: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answers do not wait for the log; the calls that came while an append was in
    flight are written together after it, in order; a refusal is appended after them all."""
    settings = _settings(tmp_path, fake_llm)
    recording = await _recorded(store, settings, fake_llm)
    replay = await _replay_of(store, recording)
    gate, sizes = _held_appends(store, monkeypatch, replay)
    calls = ExternalCalls(store, settings)

    answers = [
        (await asyncio.wait_for(calls.complete(replay, _request(q)), 5)).content
        for q in ("first?", "second?", "third?")
    ]
    assert answers == ["one", "two", "three"]  # while no append could finish
    assert [e.kind for e in await store.read(replay)] == ["session.created"]
    settling = asyncio.create_task(calls.replays.settled(replay))
    diverging = asyncio.create_task(calls.complete(replay, _request("fourth?")))
    await asyncio.sleep(0.05)
    assert not settling.done()  # settled means durable
    assert not diverging.done()  # a refusal is committed after the calls served before it
    gate.set()
    await settling
    with pytest.raises(GatewayError) as refused:
        await diverging

    assert refused.value.code == DIVERGED_CODE
    served = [e.payload for e in await store.read(replay) if e.kind == "llm.call"]
    recorded = [e.seq for e in await store.read(recording) if e.kind == "llm.call"]
    assert [p.get("replayed_from") for p in served] == [*recorded, None]
    assert served[-1]["error_kind"] == DIVERGED
    assert sum(sizes[:-1]) == 3 and len(sizes) < 4  # calls written together, then the refusal


async def test_an_append_that_fails_stops_the_replay_loudly(
    store: EventStore, tmp_path: Path, fake_llm: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A served call's append that fails: nothing after it is written, and every later
    request and the replay's settling fail with the reason."""
    settings = _settings(tmp_path, fake_llm)
    recording = await _recorded(store, settings, fake_llm)
    replay = await _replay_of(store, recording)
    append = store.append

    async def failing(session: uuid.UUID, events: Any, **options: Any) -> Any:
        if session == replay:
            raise DatabaseUnavailableError("the database went away")
        return await append(session, events, **options)

    monkeypatch.setattr(store, "append", failing)
    calls = ExternalCalls(store, settings)

    assert (await calls.complete(replay, _request("first?"))).content == "one"
    with pytest.raises(GatewayError) as settled:
        await calls.replays.settled(replay)
    with pytest.raises(GatewayError) as later:
        await calls.complete(replay, _request("second?"))

    for failure in (settled.value, later.value):
        assert (failure.status, failure.code) == (500, "replay_log_failed")
        assert "the replay's log could not be written (the database went away)" in (failure.message)
        assert "1 call the gateway answered not recorded" in failure.message
    monkeypatch.setattr(store, "append", append)
    assert [e.kind for e in await store.read(replay)] == ["session.created"]


async def test_a_recorded_stream_that_was_cut_is_served_cut(
    store: EventStore, tmp_path: Path, fake_llm: FakeLlmServer
) -> None:
    """The recorded client went away after the stream's first piece: the replay streams that
    piece, then the error, and no finish or usage (it was served whole, as if finished)."""
    settings = _settings(tmp_path, fake_llm)
    recording = uuid.uuid4()
    await store.append(recording, [external_session(title="r", user="u", user_agent=None)])
    fake_llm.script(Reply(content="partial answer", stream_pieces=["part", "ial answer"],
                          stream_held=True))  # fmt: skip
    live = ExternalCalls(store, settings)
    stream = live.stream(recording, _request("question?", stream=True))
    seen = []
    async for chunk in stream:
        seen.append(chunk)
        if any(c.get("delta", {}).get("content") for c in chunk["choices"]):
            stream.cut("the client went away")
            break
    await stream.ended()
    fake_llm.release_held()
    await live.close()
    recorded = [e for e in await store.read(recording) if e.kind == "llm.call"]
    assert recorded[-1].payload["error_kind"] == "cut"

    calls = ExternalCalls(store, settings)
    replay = await _replay_of(store, recording)
    served = calls.stream(replay, _request("question?", stream=True))
    chunks = [chunk async for chunk in served]
    await served.ended()
    await calls.close()

    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "part"
    assert [c for c in chunks if not c["choices"] or c["choices"][0]["finish_reason"]] == []
    assert served.error is not None and "cut" in served.error.message
    assert len(fake_llm.requests) == 1  # the replay asked no model
