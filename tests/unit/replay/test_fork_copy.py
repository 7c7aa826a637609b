"""A fork's copy of its source's ``session.created``: a fork of a replay keeps the replay's
agent overrides but is no replay (no ``replay_of``, no mode), and names where it was cut."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

from app.events import Event, Message, SessionCreated
from app.replay.fork import copy_prefix
from app.store import RecordedEvent

SOURCE = uuid.uuid4()
RECORDING = uuid.uuid4()


def recorded(seq: int, event: Event) -> RecordedEvent:
    return RecordedEvent(
        global_position=seq, session_id=SOURCE, seq=seq, event_id=uuid.uuid4(), tx=seq,
        kind=event.kind, source=event.source, cause=None, payload=event.payload(),
        schema_version=1, created_at=datetime(2026, 1, 1, tzinfo=UTC), hash=b"",
    )  # fmt: skip


class Appended:
    """The one call of the store ``copy_prefix`` makes."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def append(self, session: uuid.UUID, events: list[Event], **_: Any) -> None:
        self.events = events


def test_a_fork_of_a_replay_keeps_its_overrides_and_is_no_replay() -> None:
    created = SessionCreated.model_validate({
        "title": "replay of a task",
        "replay_of": RECORDING,
        "config": {
            "model": "openai/m", "replay_mode": "strict", "on_divergence": "fork",
            "agent_config": {"system_prompt": "You are terse."}, "tools": ["finish"],
        },
    })  # fmt: skip
    prefix = [recorded(1, created), recorded(2, Message(content="the task", source="user"))]
    store = Appended()
    asyncio.run(copy_prefix(store, SOURCE, uuid.uuid4(), prefix, {"model": "openai/other"}))  # type: ignore[arg-type]

    copy = store.events[0].payload()
    assert copy["forked_from"] == str(SOURCE) and copy["forked_at"] == 2
    assert copy.get("replay_of") is None
    assert copy["config"] == {
        "model": "openai/other",
        "agent_config": {"system_prompt": "You are terse."},
        "tools": ["finish"],
    }
    assert [e.payload()["replayed_from"] for e in store.events] == [1, 2]
