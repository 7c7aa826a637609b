"""What changed between a recorded model request and the one a replayed agent makes.

A request is its model, parameters, prompt messages and tools. Messages compare without
their volatile fields (ids, tool call ids, timestamps: ``app.llm.fingerprint``), as the
fingerprint does; the first message that differs is shown as a unified diff of its text.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from app.events import canonical_json
from app.llm.fingerprint import stable_hash
from app.replay.divergence import MessageChange, ParamsChange, RequestDivergence, ToolsChange


class ModelRequest(BaseModel):
    """One model request as recorded (or as the replayed agent makes it)."""

    model_config = ConfigDict(frozen=True)

    model: str
    params: dict[str, Any]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    fingerprint: str


def message_text(message: dict[str, Any]) -> str:
    """A message as lines to diff: its text (parts one per line), then its tool calls."""
    content = message.get("content")
    if isinstance(content, str):
        lines = [content]
    elif isinstance(content, list):
        lines = [
            str(part.get("text", "")) if part.get("type") == "text" else canonical_json(part)
            for part in content
            if isinstance(part, dict)
        ]
    else:
        lines = [] if content is None else [canonical_json(content)]
    for call in message.get("tool_calls") or []:
        function = call.get("function", call) if isinstance(call, dict) else {}
        lines.append(f"[tool call] {function.get('name')}({function.get('arguments', '')})")
    return "\n".join(lines)


def _lines(text: str) -> list[str]:
    """The text's lines, each ending in a newline (a last line without one would run into
    the next line of the diff)."""
    return [line if line.endswith("\n") else f"{line}\n" for line in text.splitlines(True)]


def _diff(recorded: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(_lines(recorded), _lines(new), fromfile="recorded", tofile="replay")
    )


def message_change(
    recorded: list[dict[str, Any]], new: list[dict[str, Any]]
) -> MessageChange | None:
    """The first message that differs (ignoring volatile fields), or None."""
    for index in range(max(len(recorded), len(new))):
        old = recorded[index] if index < len(recorded) else None
        fresh = new[index] if index < len(new) else None
        if old is not None and fresh is not None and stable_hash(old) == stable_hash(fresh):
            continue
        old_text = message_text(old) if old is not None else ""
        new_text = message_text(fresh) if fresh is not None else ""
        diff = _diff(old_text, new_text)
        if not diff and old is not None and fresh is not None:  # same text, other fields
            diff = _diff(_fields(old), _fields(fresh))
        return MessageChange(
            index=index,
            recorded_role=old.get("role") if old is not None else None,
            new_role=fresh.get("role") if fresh is not None else None,
            diff=diff,
        )
    return None


def _fields(message: dict[str, Any]) -> str:
    return json.dumps(message, indent=1, sort_keys=True, ensure_ascii=False, default=str)


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("function", tool).get("name"))


def tools_change(recorded: list[dict[str, Any]], new: list[dict[str, Any]]) -> ToolsChange | None:
    """Tools only recorded, only new, or changed (by name); None when the lists are equal."""
    if canonical_json(recorded) == canonical_json(new):
        return None
    old_by_name = {_tool_name(tool): canonical_json(tool) for tool in recorded}
    new_by_name = {_tool_name(tool): canonical_json(tool) for tool in new}
    changed = [
        name
        for name in old_by_name
        if name in new_by_name and old_by_name[name] != new_by_name[name]
    ]
    old_tools = {_tool_name(tool): tool for tool in recorded}
    new_tools = {_tool_name(tool): tool for tool in new}
    change = ToolsChange(
        removed=[name for name in old_by_name if name not in new_by_name],
        added=[name for name in new_by_name if name not in old_by_name],
        changed=changed,
        diff="".join(_diff(_fields(old_tools[name]), _fields(new_tools[name])) for name in changed),
    )
    if not (change.removed or change.added or change.changed):  # the same tools, reordered
        change = ToolsChange(changed=list(new_by_name))
    return change


def params_change(recorded: ModelRequest, new: ModelRequest) -> ParamsChange | None:
    old = {"model": recorded.model, **recorded.params}
    fresh = {"model": new.model, **new.params}
    return (
        None
        if canonical_json(old) == canonical_json(fresh)
        else ParamsChange(recorded=old, new=fresh)
    )


def compare_requests(
    step: int, recorded_seq: int, recorded: ModelRequest, new: ModelRequest
) -> RequestDivergence | None:
    """None when the fingerprints agree; else what differs (message, tools, parameters)."""
    if recorded.fingerprint == new.fingerprint:
        return None
    message = message_change(recorded.messages, new.messages)
    tools = tools_change(recorded.tools, new.tools)
    params = params_change(recorded, new)
    parts = []
    if message is not None:
        role = message.recorded_role or message.new_role
        parts.append(f"prompt message {message.index} ({role}) differs")
    if tools is not None:
        parts.append("the tools differ")
    if params is not None:
        parts.append("the model parameters differ")
    what = "; ".join(parts) or "the request's fingerprint differs"
    return RequestDivergence(
        step=step,
        recorded_seq=recorded_seq,
        recorded_fingerprint=recorded.fingerprint,
        new_fingerprint=new.fingerprint,
        message=message,
        tools=tools,
        params=params,
        summary=f"model call {step}: {what}",
    )
