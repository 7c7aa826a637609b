"""Turning the model's tool calls into actions, or into an error the model can read."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from app.events import Action, FileEdit, Finish, McpCall, Run, Think, ToolCall


class InvalidToolCall(ValueError):
    """A tool call that cannot become an action; the message is shown to the model."""


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise InvalidToolCall(
            f"the arguments of {call.name} are not valid JSON ({exc.msg} at {exc.pos}); "
            "send a JSON object"
        ) from None
    if not isinstance(arguments, dict):
        raise InvalidToolCall(f"the arguments of {call.name} must be a JSON object")
    return arguments


def to_action(call: ToolCall, *, thought: str, mcp_tools: dict[str, tuple[str, str]]) -> Action:
    """The action for one tool call. ``mcp_tools`` maps model-facing names to (server, tool)."""
    arguments = _arguments(call)
    common = {"tool_call_id": call.id, "thought": thought}
    try:
        if call.name == "execute_bash":
            return Run(
                command=arguments.get("command"),
                is_input=bool(arguments.get("is_input", False)),
                timeout=arguments.get("timeout"),
                **common,
            )
        if call.name == "str_replace_editor":
            return FileEdit(
                **{k: v for k, v in arguments.items() if k in FileEdit.model_fields}, **common
            )
        if call.name == "think":
            return Think(thought=str(arguments.get("thought", "")), tool_call_id=call.id)
        if call.name == "finish":
            return Finish(message=str(arguments.get("message", "")), **common)
        if call.name in mcp_tools:
            server, tool = mcp_tools[call.name]
            return McpCall(server=server, tool=tool, arguments=arguments, **common)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidToolCall(f"{call.name} was called with bad arguments ({problems})") from None
    known = ["execute_bash", "str_replace_editor", "think", "finish", *mcp_tools]
    raise InvalidToolCall(f"there is no tool {call.name!r}; the tools are: {', '.join(known)}")
