"""Searching one session's events (app/server/event_search.py): words in any text of a
payload (never its field names), the kind groups, and every way a session records an error."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.server.event_search import EventQuery, headline, is_error, match


def test_words_are_found_in_texts_not_in_field_names() -> None:
    payload = {"command": "pytest -q tests/", "thought": "Run The Tests"}
    found = match("run", payload, EventQuery(text="the tests"))
    assert found is not None and found.snippet == "Run The Tests" and not found.error
    assert match("run", payload, EventQuery(text="command")) is None
    nested = {"content": [{"type": "text", "text": "deep inside a KeyError here"}]}
    assert match("mcp.result", nested, EventQuery(text="keyerror")) is not None


def test_a_snippet_is_the_match_with_some_context_on_one_line() -> None:
    text = "x" * 500 + " needle\n in\tthe haystack " + "y" * 500
    found = match("message", {"content": text}, EventQuery(text="needle"))
    assert found is not None
    assert found.snippet.startswith("…") and found.snippet.endswith("…")
    assert "needle in the haystack" in found.snippet and len(found.snippet) < 200


def test_the_kind_groups_include_the_observations_of_their_actions() -> None:
    commands = EventQuery(kind="commands")
    assert match("run", {"command": "ls"}, commands) is not None
    assert match("run.output", {"output": "a\nb", "exit_code": 0}, commands) is not None
    assert match("file.edit", {"path": "a.py"}, commands) is None
    assert match("file.edit.output", {"path": "a.py"}, EventQuery(kind="files")) is not None
    noted = {"label": "unsafe command", "comment": "rm -rf", "tags": ["x"]}
    assert match("annotation", noted, EventQuery(kind="annotations", text="unsafe")) is not None
    removed = {"target_seq": 3, "path": "/output", "user": "root", "reason": "a pasted key"}
    found = match("redaction", removed, EventQuery(kind="redactions"))
    assert found is not None and found.snippet == "#3 /output redacted by root: a pasted key"
    assert match("annotation", noted, EventQuery(kind="redactions")) is None
    both = EventQuery(kind="commands", text="make")
    assert match("run", {"command": "make test"}, both) is not None
    assert match("run", {"command": "ls"}, both) is None
    assert match("message", {"content": "make it so"}, both) is None


@pytest.mark.parametrize(
    ("kind", "payload", "error"),
    [
        ("error", {"message": "boom"}, True),
        ("runtime.failed", {"reason": "no image"}, True),
        ("run.output", {"exit_code": 0}, False),
        ("run.output", {"exit_code": 2}, True),
        ("run.output", {"exit_code": None, "timed_out": True}, True),
        ("run.output", {"exit_code": None, "still_running": True}, False),
        ("llm.call", {"error": "rate limited"}, True),
        ("llm.call", {"error": None}, False),
        ("mcp.result", {"is_error": True}, True),
        ("mcp.result", {"is_error": "true"}, False),  # only what the model validated
        ("agent.state", {"state": "error"}, True),
        ("agent.state", {"state": "finished"}, False),
        ("message", {"content": "error"}, False),
    ],
)
def test_errors_are_every_way_a_session_records_one(
    kind: str, payload: dict[str, object], error: bool
) -> None:
    assert is_error(kind, payload) is error
    assert (match(kind, payload, EventQuery(kind="errors")) is not None) is error


def test_a_kind_alone_matches_with_the_events_headline() -> None:
    found = match("run", {"command": "make   test"}, EventQuery(kind="commands"))
    assert found is not None and found.snippet == "make test"
    assert headline("session.created", {}) == "session.created"


def test_an_empty_or_huge_query_is_refused() -> None:
    with pytest.raises(ValidationError):
        EventQuery(text="")
    with pytest.raises(ValidationError):
        EventQuery(text="x" * 201)
    with pytest.raises(ValidationError):
        EventQuery.model_validate({"kind": "everything"})
