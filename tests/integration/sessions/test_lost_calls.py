"""The worker that takes a session over records the model call its dead holder had in flight,
once, and only when that holder is gone: a holder that only stalled past its lease still
holds the session's claim, and records its call itself. A lost call is no iteration."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from app.agent.codeact import CodeActAgent
from app.agent.controller import AgentController, Limits
from app.events import AgentState, Message, SessionCreated
from app.events.lifecycle import RuntimeStatus
from app.events.llm import LOST
from app.llm import LlmConfig, LlmGateway
from app.sessions.lost_calls import record_lost_call
from app.store import EventStore, claim_session
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


async def calling_the_model(store: EventStore) -> uuid.UUID:
    """A session whose run got its sandbox up and was about to hear from the model."""
    session = uuid.uuid4()
    config = {"agent": "codeact", "runtime": "local", "model": "openai/fake-model"}
    await store.append(
        session,
        [
            SessionCreated(title="t", config=config),
            Message(content="task", source="user"),
            RuntimeStatus(kind="runtime.starting", runtime="local"),
            RuntimeStatus(kind="runtime.ready", runtime="local"),
            AgentState(state="running", source="agent"),
        ],
        expected_seq=0,
    )
    return session


async def test_the_call_in_flight_is_recorded_once_when_its_holder_is_gone(
    store: EventStore,
) -> None:
    session = await calling_the_model(store)
    recorded = await record_lost_call(store, session, "worker-a")
    assert recorded is not None and recorded.seq == 6
    assert recorded.kind == "llm.call" and recorded.payload["error_kind"] == LOST
    assert "worker-a" in recorded.payload["error"]
    assert recorded.payload["usage"]["prompt_tokens"] is None
    assert await record_lost_call(store, session, "worker-b") is None  # once
    assert await store.last_seq(session) == 6
    assert (await store.verify(session)).ok


async def test_a_holder_that_still_holds_the_claim_records_its_own_call(
    store: EventStore,
) -> None:
    session = await calling_the_model(store)
    async with claim_session(store, session, on_lost=lambda: None):
        assert await record_lost_call(store, session, "stalled-worker") is None
    assert await store.last_seq(session) == 5


async def test_a_lost_call_is_no_iteration(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """A replay serves no lost call, so a live run counts none either: with room for one
    iteration left, the run after a lost call still asks the model (and a replay of it stops
    where it did)."""
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done")]))
    session = await calling_the_model(store)
    assert await record_lost_call(store, session, "worker-a") is not None
    config = LlmConfig(model="openai/fake-model", base_url=fake_llm.base_url, api_key="k",
                       native_tool_calling=True)  # fmt: skip
    agent = CodeActAgent(LlmGateway(store, config), str(tmp_path))
    controller = AgentController(store, session, agent, limits=Limits(max_iterations=1))
    async with asyncio.timeout(30):
        assert await controller.run() == "finished"
    assert len(fake_llm.requests) == 1
