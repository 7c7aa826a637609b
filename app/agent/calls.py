"""Turning the model's tool calls into actions, or into an error the model can read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from app.agent.arguments import InvalidToolCall, coerce_arguments
from app.events import (
    Action,
    ErrorObservation,
    Event,
    FileEdit,
    Finish,
    McpCall,
    Message,
    Run,
    Think,
    ToolCall,
)

__all__ = ["InvalidToolCall", "consequences", "empty_reply", "to_action"]


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise InvalidToolCall(
            f"the arguments of {call.name} are not valid JSON ({exc.msg} at {exc.pos}); "
            "send a JSON object"
        ) from None
    except RecursionError:
        raise InvalidToolCall(
            f"the arguments of {call.name} are not valid JSON here (nested too deeply); "
            "send a flat JSON object"
        ) from None
    if not isinstance(arguments, dict):
        raise InvalidToolCall(f"the arguments of {call.name} must be a JSON object")
    return arguments


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    parameters = tool.get("function", tool).get("parameters")
    return parameters if isinstance(parameters, dict) else {}


def _action(name: str, arguments: dict[str, Any], common: dict[str, Any]) -> Action | None:
    if name == "execute_bash":
        return Run(**arguments, **common)
    if name == "str_replace_editor":
        return FileEdit(**arguments, **common)
    if name == "think":
        return Think(thought=str(arguments.get("thought", "")), tool_call_id=common["tool_call_id"])
    if name == "finish":
        return Finish(message=str(arguments.get("message", "")), **common)
    return None


def to_action(
    call: ToolCall,
    *,
    thought: str,
    tools: list[dict[str, Any]],
    mcp_tools: dict[str, tuple[str, str]],
) -> Action:
    """The action for one tool call, its arguments coerced to the schema of the tool of that
    name in ``tools``. ``mcp_tools`` maps model-facing names to (server, tool)."""
    schemas = {tool.get("function", tool).get("name"): _parameters(tool) for tool in tools}
    if call.name not in schemas:
        known = ", ".join(name for name in schemas if isinstance(name, str))
        raise InvalidToolCall(f"there is no tool {call.name!r}; the tools are: {known}")
    arguments = coerce_arguments(call.name, _arguments(call), schemas[call.name])
    common = {"tool_call_id": call.id, "thought": thought}
    try:
        if call.name in mcp_tools:
            server, tool = mcp_tools[call.name]
            return McpCall(server=server, tool=tool, arguments=arguments, **common)
        # Only what the tool's schema names reaches the action: a model's extra arguments
        # (even one called "cause" or "thought") are ignored.
        properties = schemas[call.name].get("properties") or {}
        action = _action(call.name, {k: v for k, v in arguments.items() if k in properties}, common)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidToolCall(f"{call.name} was called with bad arguments ({problems})") from None
    if action is None:
        raise InvalidToolCall(f"the tool {call.name!r} cannot be run by this agent")
    return action


def consequences(
    call: Mapping[str, Any],
    call_seq: int,
    *,
    tools: list[dict[str, Any]],
    mcp_tools: dict[str, tuple[str, str]],
) -> list[Event]:
    """What a model call (its ``llm.call`` payload) leads to, each with ``cause`` = the
    call's seq: one action per valid tool call and one error for the invalid ones; without
    tool calls, the agent's message to the user; for an empty or unusable reply, an error
    the model reads on its next step (and the controller calls again)."""
    if call.get("error"):
        return [ErrorObservation(message=call["error"], error_type="bad_response", cause=call_seq)]
    response = call.get("response") or {}
    content = response.get("content") or ""
    tool_calls = response.get("tool_calls") or []
    if not tool_calls and not content.strip():
        return [
            ErrorObservation(
                message=empty_reply(response.get("finish_reason")),
                error_type="empty_reply",
                cause=call_seq,
            )
        ]
    events: list[Event] = []
    problems: list[tuple[str, str]] = []
    for raw in tool_calls:
        tool_call = ToolCall.model_validate(raw)
        try:
            action: Action = to_action(tool_call, thought=content, tools=tools, mcp_tools=mcp_tools)
        except InvalidToolCall as exc:
            problems.append((tool_call.id, str(exc)))
            continue
        events.append(action.model_copy(update={"cause": call_seq}))
    if problems:
        events.append(
            ErrorObservation(
                message="; ".join(message for _, message in problems),
                error_type="invalid_tool_call",
                tool_call_id=problems[0][0],
                cause=call_seq,
            )
        )
    if not tool_calls:
        events.append(Message(content=content, source="agent", cause=call_seq))
    return events


def empty_reply(finish_reason: str | None) -> str:
    """What the model (and the user) read when a reply had neither text nor a tool call."""
    why = ""
    if finish_reason == "length":
        why = " (it stopped at the output token limit: raise llm_max_output_tokens)"
    elif finish_reason and finish_reason not in ("stop", "tool_calls"):
        why = f" (finish_reason {finish_reason})"
    return (
        f"the model sent an empty reply: no text and no tool call{why}. Call a tool to go on, "
        "call finish when the task is done, or write a message if you need the user"
    )
