"""The gateway's calls for a replay session (``chronicle record --replay``): served from the
recording in order, no model called, and a request past the recording refused in the
agent's protocol, with the refusal recorded. Real PostgreSQL and the fake model (which
records the calls first)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.external.calls import ChatRequest, ExternalCalls
from app.external.errors import GatewayError
from app.external.replay_serving import DIVERGED, DIVERGED_CODE
from app.external.sessions import external_session
from app.store import EventStore
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
