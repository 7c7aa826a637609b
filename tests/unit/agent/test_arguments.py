"""Tool-call arguments coerced to the tool's schema the way models send them (pure code)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.agent.arguments import InvalidToolCall, coerce_arguments
from app.agent.calls import to_action
from app.agent.tools import BUILTIN_TOOLS, mcp_tool_schema
from app.events import Action, FileEdit, McpCall, Run, ToolCall


def action(
    name: str,
    arguments: str,
    tools: list[dict[str, Any]] | None = None,
    mcp: dict[str, tuple[str, str]] | None = None,
) -> Action:
    call = ToolCall(id="c1", name=name, arguments=arguments)
    return to_action(call, thought="", tools=tools or BUILTIN_TOOLS, mcp_tools=mcp or {})


@pytest.mark.parametrize("sent", ['"false"', '"False"', '"0"', '"no"', "false", "0"])
def test_a_false_string_is_false(sent: str) -> None:
    # Before: bool("false") is True, so the command was typed into no running process.
    run = action("execute_bash", f'{{"command": "ls", "is_input": {sent}}}')
    assert isinstance(run, Run) and run.is_input is False


@pytest.mark.parametrize("sent", ['"true"', '"True"', '"1"', '"yes"', "true", "1"])
def test_a_true_string_is_true(sent: str) -> None:
    run = action("execute_bash", f'{{"command": "y", "is_input": {sent}}}')
    assert isinstance(run, Run) and run.is_input is True


def test_numbers_as_strings_are_numbers() -> None:
    run = action("execute_bash", '{"command": "sleep 1", "timeout": "5"}')
    assert isinstance(run, Run) and run.timeout == 5
    edit = action(
        "str_replace_editor",
        '{"command": "insert", "path": "a.py", "insert_line": "3", "new_str": "x"}',
    )
    assert isinstance(edit, FileEdit) and edit.insert_line == 3
    view = action("str_replace_editor", '{"command": "view", "path": "a", "view_range": "[1, 20]"}')
    assert isinstance(view, FileEdit) and view.view_range == [1, 20]
    items = action(
        "str_replace_editor", '{"command": "view", "path": "a", "view_range": ["1", -1]}'
    )
    assert isinstance(items, FileEdit) and items.view_range == [1, -1]


@pytest.mark.parametrize("timeout", ["1e999", "-1e999", '"1e999"', '"inf"', '"NaN"'])
def test_a_timeout_that_is_not_finite_is_refused_saying_so(timeout: str) -> None:
    # Before: 1e999 became inf, which passed Run's gt=0 and then crashed the append.
    with pytest.raises(InvalidToolCall, match="timeout must be a finite number"):
        action("execute_bash", f'{{"command": "sleep 1", "timeout": {timeout}}}')


def test_missing_arguments_say_missing() -> None:
    with pytest.raises(InvalidToolCall, match="missing command"):
        action("execute_bash", '{"timeout": 3}')
    with pytest.raises(InvalidToolCall) as raised:
        action("str_replace_editor", "{}")
    assert "missing command" in str(raised.value) and "missing path" in str(raised.value)
    with pytest.raises(InvalidToolCall, match="missing command"):
        action("execute_bash", '{"command": null}')


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(InvalidToolCall) as raised:
        action("execute_bash", '{"command": "x", "is_input": "maybe", "timeout": "soon"}')
    message = str(raised.value)
    assert "is_input must be true or false" in message and "timeout must be a number" in message
    assert "missing" not in message


def test_enum_and_wrong_types_are_refused() -> None:
    with pytest.raises(InvalidToolCall, match="command must be one of view, create"):
        action("str_replace_editor", '{"command": "delete", "path": "a"}')
    with pytest.raises(InvalidToolCall, match="command must be a string"):
        action("execute_bash", '{"command": ["ls"]}')
    with pytest.raises(InvalidToolCall, match="insert_line must be a whole number"):
        action("str_replace_editor", '{"command": "insert", "path": "a", "insert_line": 2.5}')


def test_null_means_left_out_and_numbers_may_stand_for_strings() -> None:
    run = action("execute_bash", '{"command": 42, "is_input": null, "timeout": null}')
    assert isinstance(run, Run) and (run.command, run.is_input, run.timeout) == ("42", False, None)


def test_extra_arguments_never_reach_the_envelope() -> None:
    # Before: a model's "thought" or "cause" argument collided with the action's own fields.
    run = action("execute_bash", '{"command": "ls", "cause": 1, "thought": "x", "kind": "finish"}')
    assert isinstance(run, Run) and run.cause is None and run.kind == "run"


def test_unknown_tool_and_bad_json_are_errors_for_the_model() -> None:
    with pytest.raises(InvalidToolCall, match=r"no tool 'teleport'.*execute_bash"):
        action("teleport", "{}")
    with pytest.raises(InvalidToolCall, match="not valid JSON"):
        action("execute_bash", "{not json")
    with pytest.raises(InvalidToolCall, match="must be a JSON object"):
        action("execute_bash", '["ls"]')


def test_lone_surrogates_and_nul_pass_through_as_sent() -> None:
    # They are text the model sent; the store escapes them reversibly, the sandbox decides.
    edit = action("str_replace_editor", '{"command": "view", "path": "caf\\udce9.txt"}')
    assert isinstance(edit, FileEdit) and edit.path == "caf\udce9.txt"
    run = action("execute_bash", '{"command": "printf \'a\\u0000b\'"}')
    assert isinstance(run, Run) and "\x00" in run.command


def test_mcp_arguments_follow_the_server_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "loud": {"type": "boolean"}},
        "required": ["count"],
    }
    tool = mcp_tool_schema("echo", "say", "Say it.", schema)
    mcp = {"echo__say": ("echo", "say")}
    call = action("echo__say", '{"count": "3", "loud": "false", "extra": "kept"}', [tool], mcp)
    assert isinstance(call, McpCall)
    assert call.arguments == {"count": 3, "loud": False, "extra": "kept"}
    with pytest.raises(InvalidToolCall, match="missing count"):
        action("echo__say", "{}", [tool], mcp)


def test_type_lists_and_schemas_without_types() -> None:
    schema = {
        "properties": {
            "n": {"type": ["integer", "null"]},
            "any": {},
            "obj": {"type": "object"},
        }
    }
    out = coerce_arguments("t", {"n": None, "any": [1], "obj": '{"a": 1}'}, schema)
    assert out == {"n": None, "any": [1], "obj": {"a": 1}}
    assert coerce_arguments("t", {"n": "7"}, schema) == {"n": 7}
    with pytest.raises(InvalidToolCall, match="obj must be a JSON object"):
        coerce_arguments("t", {"obj": "[1]"}, schema)
    with pytest.raises(InvalidToolCall, match="any must be a finite number"):
        coerce_arguments("t", {"any": json.loads("1e999")}, schema)
