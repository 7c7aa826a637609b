"""Sessions recorded the way the API creates them (configuration and task, no run), for
tests of the workers that then run them."""

from __future__ import annotations

import uuid
from pathlib import Path

from app.events import Message, SessionCreated
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer


async def recorded_session(
    store: EventStore, fake: FakeLlmServer, workspace: Path, task: str, runtime: str = "local"
) -> uuid.UUID:
    """A session with its ``session.created`` (a local runtime unless told, the fake model)
    and the user's task, that nobody runs yet."""
    session = uuid.uuid4()
    config = {
        "agent": "codeact",
        "workspace": str(workspace),
        "runtime": runtime,
        "model": "openai/fake-model",
        "base_url": fake.base_url,
        "max_iterations": 20,
    }
    await store.append(
        session,
        [SessionCreated(title=task, config=config), Message(content=task, source="user")],
        expected_seq=0,
    )
    return session
