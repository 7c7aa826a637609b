"""What changed between a recorded request and a replayed one: message, tools, parameters."""

from __future__ import annotations

from typing import Any

from app.agent.tools import EXECUTE_BASH, FINISH, THINK
from app.llm.fingerprint import content_hash, fingerprint, stable_hash
from app.replay.requests import ModelRequest, compare_requests, message_text


def request(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    params: dict[str, Any] | None = None,
    model: str = "openai/fake-model",
) -> ModelRequest:
    """A request with its fingerprint computed as the gateway computes it."""
    tools = [EXECUTE_BASH, FINISH] if tools is None else tools
    params = {"temperature": 0.0} if params is None else params
    print_ = fingerprint(
        model, [stable_hash(m) for m in messages], content_hash({"tools": tools}), params
    )
    return ModelRequest(
        model=model, params=params, messages=messages, tools=tools, fingerprint=print_
    )


CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are helpful.\nBe brief."},
    {"role": "user", "content": "Fix it."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "execute_bash", "content": "a.py"},
]


def test_the_same_request_with_other_tool_call_ids_is_no_divergence() -> None:
    renumbered = [dict(m) for m in CONVERSATION]
    renumbered[3] = {**renumbered[3], "tool_call_id": "call_77"}
    renumbered[2] = {
        **renumbered[2],
        "tool_calls": [{**CONVERSATION[2]["tool_calls"][0], "id": "call_77"}],
    }
    assert compare_requests(1, 5, request(CONVERSATION), request(renumbered)) is None


def test_a_changed_system_prompt_names_message_0_its_role_and_a_diff() -> None:
    changed = [{"role": "system", "content": "You are helpful.\nBe thorough."}, *CONVERSATION[1:]]
    divergence = compare_requests(1, 5, request(CONVERSATION), request(changed))
    assert divergence is not None and divergence.kind == "request"
    assert (divergence.step, divergence.recorded_seq) == (1, 5)
    message = divergence.message
    assert message is not None
    assert (message.index, message.recorded_role, message.new_role) == (0, "system", "system")
    assert "-Be brief." in message.diff and "+Be thorough." in message.diff
    assert message.diff.startswith("--- recorded\n+++ replay\n")
    assert divergence.tools is None and divergence.params is None
    assert divergence.summary == "model call 1: prompt message 0 (system) differs"


def test_a_missing_message_is_shown_against_nothing() -> None:
    divergence = compare_requests(2, 9, request(CONVERSATION), request(CONVERSATION[:3]))
    assert divergence is not None and divergence.message is not None
    assert (divergence.message.index, divergence.message.new_role) == (3, None)
    assert "-a.py" in divergence.message.diff


def test_a_tool_call_shows_in_the_text_of_its_message() -> None:
    assert message_text(CONVERSATION[2]) == '\n[tool call] execute_bash({"command": "ls"})'


def test_tools_removed_added_and_changed_by_name() -> None:
    recorded = request(CONVERSATION, tools=[EXECUTE_BASH, FINISH])
    function: dict[str, Any] = dict(FINISH["function"])  # type: ignore[arg-type]
    described = {**FINISH, "function": {**function, "description": "other"}}
    new = request(CONVERSATION, tools=[THINK, described])
    divergence = compare_requests(1, 5, recorded, new)
    assert divergence is not None and divergence.tools is not None and divergence.message is None
    assert divergence.tools.removed == ["execute_bash"]
    assert divergence.tools.added == ["think"]
    assert divergence.tools.changed == ["finish"]
    diff = divergence.tools.diff
    assert '-  "description": "Declare the task done, with a short summary for the user.",' in diff
    assert '+  "description": "other",' in diff and "execute_bash" not in diff


def test_parameters_and_model() -> None:
    divergence = compare_requests(
        1, 5, request(CONVERSATION), request(CONVERSATION, params={"temperature": 0.7})
    )
    assert divergence is not None and divergence.params is not None
    assert divergence.params.recorded == {"model": "openai/fake-model", "temperature": 0.0}
    assert divergence.params.new == {"model": "openai/fake-model", "temperature": 0.7}
    assert divergence.summary == "model call 1: the model parameters differ"
