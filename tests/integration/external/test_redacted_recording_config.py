"""A recording whose configuration was redacted cannot be replayed through the gateway, and
says so (not "not an external session", which it was)."""

from __future__ import annotations

import uuid

import pytest

from app.events import Message, SessionCreated
from app.events.session_config import SessionConfig
from app.external.agent_command import RecordError
from app.external.replay_recording import load_recording
from app.external.sessions import EXTERNAL_AGENT
from app.store import EventStore


async def test_a_redacted_configuration_is_named(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(
        session,
        [
            SessionCreated(title="t", config=SessionConfig(agent=EXTERNAL_AGENT)),
            Message(content="x"),
        ],
    )
    await load_recording(store, session)  # replayable before
    await store.redact(session, 1, "/config", reason="it named a secret host", user="ops")
    with pytest.raises(RecordError, match=r"configuration \(seq 1\) was redacted"):
        await load_recording(store, session)
