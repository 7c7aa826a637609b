"""The event protocol: kinds, default sources, validation messages, upcasting."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import pytest
from pydantic import ValidationError

from app.events import (
    EVENT_TYPES,
    OBSERVATION_KINDS,
    AgentState,
    ErrorObservation,
    Event,
    FileEdit,
    InvalidEventError,
    LlmCall,
    Message,
    Run,
    RunOutput,
    RuntimeStatus,
    SessionCreated,
    event_from_stored,
    parse_event,
)
from app.events.ids import new_event_id
from tests.support.repository import ROOT

REQUIRED_KINDS = {
    "message", "run", "run.output", "file.read", "file.read.output", "file.write",
    "file.edit", "file.edit.output", "think", "finish", "error", "mcp.call", "mcp.result",
    "llm.call", "agent.state", "session.created", "session.closed", "runtime.starting",
    "runtime.ready", "runtime.failed",
}  # fmt: skip


def test_every_required_kind_is_registered() -> None:
    assert REQUIRED_KINDS <= set(EVENT_TYPES)


def test_message_from_the_user() -> None:
    message = Message(content="hi", source="user")
    assert (message.kind, message.source, message.payload()) == (
        "message",
        "user",
        {"content": "hi"},
    )


@pytest.mark.parametrize(
    ("event", "source"),
    [
        (Message(content="x"), "user"),
        (Run(command="ls"), "agent"),
        (RunOutput(output="x", cause=1), "environment"),
        (ErrorObservation(message="boom"), "environment"),
        (AgentState(state="running"), "agent"),
        (SessionCreated(), "system"),
        (RuntimeStatus(kind="runtime.ready"), "environment"),
        (LlmCall(model="m", fingerprint="f"), "agent"),
    ],
)
def test_default_source_per_kind(event: Event, source: str) -> None:
    assert event.source == source


def test_source_can_be_overridden_but_must_be_known() -> None:
    assert Message(content="x", source="agent").source == "agent"
    with pytest.raises(ValidationError):
        Message(content="x", source="martian")  # type: ignore[arg-type]


def test_events_are_immutable() -> None:
    with pytest.raises(ValidationError):
        Message(content="x").content = "y"  # type: ignore[misc]


def test_run_fields() -> None:
    run = Run(command="sleep 5", timeout=10, is_input=False)
    assert run.payload() == {
        "command": "sleep 5",
        "timeout": 10.0,
        "is_input": False,
        "thought": "",
        "tool_call_id": None,
    }


def test_file_edit_command_is_checked() -> None:
    FileEdit(command="str_replace", path="a.py", old_str="a", new_str="b")
    with pytest.raises(InvalidEventError) as raised:
        parse_event({"kind": "file.edit", "command": "rm", "path": "a.py"})
    assert (raised.value.kind, raised.value.field) == ("file.edit", "command")


def test_unknown_kind_names_it() -> None:
    with pytest.raises(InvalidEventError, match=r"unknown event kind 'x\.y'"):
        parse_event({"kind": "x.y"})
    with pytest.raises(InvalidEventError, match="needs a 'kind'"):
        parse_event({"content": "no kind"})


def test_extra_fields_are_refused() -> None:
    with pytest.raises(InvalidEventError, match="contnet"):
        parse_event({"kind": "message", "contnet": "typo"})


def test_runtime_status_serves_three_kinds() -> None:
    for kind in ("runtime.starting", "runtime.ready", "runtime.failed"):
        assert isinstance(parse_event({"kind": kind}), RuntimeStatus)


def test_observation_kinds_match_the_database_index() -> None:
    """The newest migration that sets the kinds (0001, then 0003, 0010, ...) lists the
    protocol's."""
    import importlib.util

    latest = None
    for path in sorted((ROOT / "migrations/versions").glob("[0-9]*.py")):
        if "OBSERVATION_KINDS = (" not in path.read_text(encoding="utf-8"):
            continue
        spec = importlib.util.spec_from_file_location(f"m{path.stem}", path)
        assert spec and spec.loader
        latest = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(latest)
    assert latest is not None
    assert set(latest.OBSERVATION_KINDS) == OBSERVATION_KINDS


def test_stored_payload_is_upcast_from_old_versions() -> None:
    class Renamed(Event):
        kind: Literal["message"] = "message"
        source: Any = "user"
        text: str
        schema_version: ClassVar[int] = 2

        @classmethod
        def upcast(cls, version: int, payload: dict[str, Any]) -> dict[str, Any]:
            if version == 1:
                payload = {"text": payload["content"]}
            return super().upcast(2, payload)

    import app.events.registry as registry

    original = registry.EVENT_TYPES["message"]
    registry.EVENT_TYPES["message"] = Renamed
    try:
        event = event_from_stored(
            kind="message", source="user", cause=None, event_id=new_event_id(),
            payload={"content": "old"}, schema_version=1,
        )  # fmt: skip
    finally:
        registry.EVENT_TYPES["message"] = original
    assert isinstance(event, Renamed) and event.text == "old"


def test_unknown_stored_version_is_an_error() -> None:
    with pytest.raises(ValueError, match="no upcaster from schema_version 9"):
        event_from_stored(
            kind="message", source="user", cause=None, event_id=new_event_id(),
            payload={"content": "x"}, schema_version=9,
        )  # fmt: skip


def test_event_ids_are_time_ordered_uuid7() -> None:
    ids = [new_event_id() for _ in range(100)]
    assert all(i.version == 7 for i in ids)
    assert [i.int >> 80 for i in ids] == sorted(i.int >> 80 for i in ids)
    assert len(set(ids)) == 100
