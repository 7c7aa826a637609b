"""The playground's edit in words (what the new session records as ``from_call.changes``), and
a recorded call's parameters as they are offered for editing."""

from __future__ import annotations

import pytest

from app.external.playground import (
    CallRequest,
    PlaygroundRefused,
    checked_params,
    edit_changes,
    editable_params,
)

SYSTEM = {"role": "system", "content": "You are terse."}
TASK = {"role": "user", "content": "Say hello"}
ANSWER = {"role": "assistant", "content": "hello"}
MORE = {"role": "user", "content": "Again"}
TOOL = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object"}}}


def call(**changes: object) -> CallRequest:
    values: dict[str, object] = {
        "model": "openai/a",
        "messages": [SYSTEM, TASK, ANSWER, MORE],
        "tools": [TOOL],
        "params": {"temperature": 0.0},
    }
    values.update(changes)
    return CallRequest(**values)  # type: ignore[arg-type]


def test_the_call_sent_again_as_recorded_changed_nothing() -> None:
    assert edit_changes(call(), call()) == []


def test_an_edited_system_prompt_is_named_by_its_message() -> None:
    edited = call(messages=[{"role": "system", "content": "Be verbose."}, TASK, ANSWER, MORE])
    assert edit_changes(call(), edited) == ["message 0 (system) edited"]


def test_a_removed_message_is_one_change_not_every_later_message() -> None:
    edited = call(messages=[SYSTEM, TASK, MORE])
    assert edit_changes(call(), edited) == ["message 2 (assistant) removed"]


def test_an_added_message_and_a_changed_role() -> None:
    edited = call(
        messages=[SYSTEM, {"role": "assistant", "content": "Say hello"}, ANSWER, MORE, TASK]
    )
    assert edit_changes(call(), edited) == [
        "message 1: role user → assistant",
        "message 4 (user) added",
    ]


def test_model_tools_and_parameters() -> None:
    other = {"type": "function", "function": {"name": "think"}}
    edited = call(
        model="openai/b",
        tools=[other],
        params={"temperature": 0.7, "max_tokens": 100},
    )
    assert edit_changes(call(), edited) == [
        "model: openai/a → openai/b",
        "tool think added",
        "tool finish removed",
        "temperature: 0.0 → 0.7",
        "max_tokens: 100 (added)",
    ]
    assert edit_changes(call(), call(params={})) == ["temperature removed (was 0.0)"]


def test_recorded_parameters_lose_the_gateways_own_and_regain_extra_body() -> None:
    recorded = {
        "temperature": 0.2,
        "base_url": "http://model.internal/v1",
        "stream": True,
        "extra_body": {"top_k": 5},
    }
    assert editable_params(recorded) == {"temperature": 0.2, "top_k": 5}


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"stream": True}, "may not set stream"),
        ({"messages": []}, "may not set messages"),
        ({"n": 3}, "n must be 1"),
    ],
)
def test_parameters_the_playground_cannot_send(params: dict[str, object], says: str) -> None:
    with pytest.raises(PlaygroundRefused, match=says):
        checked_params(params)
    checked_params({"temperature": 1, "n": 1})
