"""A run the controller stops at a limit records which limit in ``agent.state`` (``limit``),
so nothing downstream has to read the reason's words."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from app.agent.codeact import CodeActAgent
from app.agent.controller import AgentController, Limits
from app.events import Message, SessionCreated
from app.llm import LlmConfig, LlmGateway
from app.store import EventStore


@pytest.mark.parametrize(
    ("limits", "named", "words"),
    [
        (Limits(max_iterations=0), "iterations", "reached the iteration limit (0)"),
        (Limits(max_cost_usd=0.0), "cost", "reached the cost limit ($0.00"),
    ],
)
async def test_a_stop_at_a_limit_names_it(
    store: EventStore, tmp_path: Path, limits: Limits, named: str, words: str
) -> None:
    session = uuid.uuid4()
    config = {"agent": "codeact", "runtime": "local", "model": "openai/never-called"}
    await store.append(session, [SessionCreated(title="t", config=config), Message(content="task")])
    gateway = LlmGateway(store, LlmConfig(model="openai/never-called", api_key="k"))
    controller = AgentController(
        store, session, CodeActAgent(gateway, str(tmp_path)), limits=limits
    )
    async with asyncio.timeout(30):
        assert await controller.run() == "stopped"
    last = (await store.read(session))[-1]
    assert last.kind == "agent.state" and last.payload["state"] == "stopped"
    assert last.payload["limit"] == named
    assert last.payload["reason"].startswith(words)  # worded for people, as before
