"""Stuck detection on hand-made logs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from app.agent.stuck import StuckConfig, detect
from app.store import RecordedEvent


class Log:
    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []

    def add(self, kind: str, source: str, payload: dict[str, Any], cause: int | None = None) -> int:
        seq = len(self.events) + 1
        self.events.append(
            RecordedEvent(
                seq,
                uuid.uuid4(),
                seq,
                uuid.uuid4(),
                1,
                kind,
                source,
                cause,
                payload,
                1,
                datetime.now(UTC),
                b"",
            )
        )
        return seq

    def pair(self, command: str, output: str) -> None:
        seq = self.add(
            "run", "agent", {"command": command, "thought": "", "tool_call_id": str(uuid.uuid4())}
        )
        self.add("run.output", "environment", {"output": output, "exit_code": 0}, cause=seq)


def test_same_action_and_result_repeated() -> None:
    log = Log()
    for _ in range(3):
        log.pair("ls", "a")
    assert detect(log.events, StuckConfig()) is None
    log.pair("ls", "a")
    assert "same action" in (detect(log.events, StuckConfig()) or "")
    assert detect(log.events, StuckConfig(enabled=False)) is None


def test_same_error_repeated() -> None:
    log = Log()
    for command in ("a", "b", "c"):
        seq = log.add("run", "agent", {"command": command})
        log.add("error", "environment", {"message": "boom"}, cause=seq)
    assert "same error" in (detect(log.events, StuckConfig()) or "")


def test_monologue() -> None:
    log = Log()
    for text in ("hmm", "well", "so"):
        log.add("message", "agent", {"content": text})
    assert "messages in a row" in (detect(log.events, StuckConfig()) or "")


def test_alternation() -> None:
    log = Log()
    for _ in range(3):
        log.pair("cat a", "A")
        log.pair("cat b", "B")
    assert "alternated" in (detect(log.events, StuckConfig()) or "")


def test_progress_is_not_stuck() -> None:
    log = Log()
    for i in range(10):
        log.pair(f"step {i}", f"out {i}")
    assert detect(log.events, StuckConfig()) is None
