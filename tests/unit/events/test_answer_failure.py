"""When an action's answer says it failed: one definition (app/events/observations.py) that
the session search's "errors" and the OTLP spans' status both use."""

from __future__ import annotations

from typing import Any

import pytest

from app.events.observations import answer_failure


@pytest.mark.parametrize(
    ("kind", "payload", "failure"),
    [
        ("run.output", {"exit_code": 0}, None),
        ("run.output", {"exit_code": None, "still_running": True}, None),
        ("run.output", {"exit_code": 2}, ("exit_code", "exited 2")),
        ("run.output", {"exit_code": -9}, ("exit_code", "exited -9")),
        # a bool is no exit code (True == 1 in Python)
        ("run.output", {"exit_code": True}, None),
        (
            "run.output",
            {"exit_code": None, "timed_out": True},
            ("timeout", "the command timed out"),
        ),
        ("mcp.result", {"is_error": True}, ("tool_error", "the tool answered with an error")),
        ("mcp.result", {"is_error": "true"}, None),  # only a real boolean says so
        ("error", {"error_type": "FileNotFound", "message": "no x"}, ("FileNotFound", "no x")),
        ("error", {}, ("_OTHER", "")),
        ("file.read.output", {"content": "exit_code"}, None),
    ],
)
def test_an_answer_says_whether_and_how_its_action_failed(
    kind: str, payload: dict[str, Any], failure: tuple[str, str] | None
) -> None:
    assert answer_failure(kind, payload) == failure
