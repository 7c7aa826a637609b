"""What single OpenHands fields say in Chronicle's terms: a flat event's nested form, an
action type's Chronicle tool and arguments, a response's usage and latency, a resolver's issue.

``openhands.py`` reads a recording's events in order with these (its docstring maps every
field); each one here reads a value and nothing else.
"""

from __future__ import annotations

import ast
from typing import Any

from app.events import LlmUsage
from app.interchange.importers.values import integer, mapping, number, text_of

#: What surrounds an action's arguments (``args``); in a flat event the rest are they.
ACTION_ENVELOPE = frozenset(
    {"id", "timestamp", "source", "message", "cause", "action", "timeout", "tool_call_metadata",
     "llm_metrics"}
)  # fmt: skip
#: What surrounds an observation's ``extras``; in a flat event the rest are they.
OBSERVATION_ENVELOPE = frozenset(
    {"id", "timestamp", "source", "message", "cause", "observation", "content", "success",
     "tool_call_metadata", "llm_metrics"}
)  # fmt: skip
#: ``edit`` commands that are ``str_replace_editor``'s (an LLM-based edit has none).
EDIT_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit"})


def nested(item: dict[str, Any]) -> dict[str, Any]:
    """A flat event (``dataclasses.asdict``: arguments or extras beside the type) in the
    nested form, ``args`` or ``extras`` holding them; a nested event as it is."""
    if "action" in item and "args" not in item:
        envelope, key = ACTION_ENVELOPE, "args"
    elif "action" not in item and "observation" in item and "extras" not in item:
        envelope, key = OBSERVATION_ENVELOPE, "extras"
    else:
        return item
    shaped = {name: value for name, value in item.items() if name in envelope}
    shaped[key] = {name: value for name, value in item.items() if name not in envelope}
    return shaped


def issue_name(issue: Any) -> str:
    """A resolver's issue as ``owner/repo#number``; empty when it does not say."""
    fields = mapping(issue)
    owner, repo, number_ = (text_of(fields.get(key)) for key in ("owner", "repo", "number"))
    return f"{owner}/{repo}#{number_}" if owner and repo and number_ else ""


def latencies_by_response(entries: Any) -> dict[str, float]:
    """``response_latencies`` (seconds, by ``response_id``) as a mapping; the last entry of
    an id counts, as OpenHands appends."""
    latencies: dict[str, float] = {}
    for entry in entries if isinstance(entries, list) else []:
        fields = mapping(entry)
        seconds = number(fields.get("latency"))
        if fields.get("response_id") and seconds is not None and seconds >= 0:
            latencies[str(fields["response_id"])] = seconds
    return latencies


def per_call_costs(costs: Any) -> list[float | None] | None:
    """An evaluation output's ``metrics.costs``: one entry per model call, in order (a number,
    or an object's ``cost`` in later versions); None when it is not a list."""
    if not isinstance(costs, list):
        return None
    return [number(mapping(cost).get("cost")) if isinstance(cost, dict) else number(cost)
            for cost in costs]  # fmt: skip


def recorded_latency_ms(item: dict[str, Any], response_id: Any) -> float | None:
    """What OpenHands measured for this response (seconds, by response id), in ms; else None."""
    if not response_id:
        return None
    latencies = mapping(item.get("llm_metrics")).get("response_latencies")
    for entry in reversed(latencies if isinstance(latencies, list) else []):
        fields = mapping(entry)
        if fields.get("response_id") == response_id:
            seconds = number(fields.get("latency"))
            return None if seconds is None or seconds < 0 else seconds * 1000
    return None


def usage_of(usage: dict[str, Any]) -> LlmUsage:
    """A litellm response's ``usage`` as Chronicle's (a count it cannot read is 0)."""
    details = mapping(usage.get("prompt_tokens_details"))
    cached = integer(details.get("cached_tokens")) or integer(usage.get("cache_read_input_tokens"))
    prompt = integer(usage.get("prompt_tokens")) or 0
    completion = integer(usage.get("completion_tokens")) or 0
    return LlmUsage(
        prompt_tokens=max(prompt, 0),
        completion_tokens=max(completion, 0),
        cached_tokens=max(cached or 0, 0),
        total_tokens=max(integer(usage.get("total_tokens")) or prompt + completion, 0),
    )


def chronicle_tool(
    name: str, args: dict[str, Any], item: dict[str, Any]
) -> tuple[str | None, dict[str, Any] | None]:
    """The Chronicle tool and arguments an OpenHands action type corresponds to, if any."""
    path = text_of(args.get("path"))
    if name == "run":
        arguments: dict[str, Any] = {"command": text_of(args.get("command"))}
        if args.get("is_input") is not None:
            arguments["is_input"] = args["is_input"]
        timeout = number(item.get("timeout"))
        if timeout is not None and timeout > 0:
            arguments["timeout"] = timeout
        return "execute_bash", arguments
    if name == "read":
        arguments = {"command": "view", "path": path}
        if isinstance(args.get("view_range"), list):
            arguments["view_range"] = args["view_range"]
        return "str_replace_editor", arguments
    if name == "edit" and args.get("command") in EDIT_COMMANDS:
        arguments = {"command": args["command"], "path": path}
        for key in ("file_text", "old_str", "new_str", "insert_line", "view_range"):
            if args.get(key) is not None:
                arguments[key] = args[key]
        return "str_replace_editor", arguments
    if name == "write":
        return "str_replace_editor", {
            "command": "create",
            "path": path,
            "file_text": text_of(args.get("content")),
        }
    if name == "think":
        return "think", {"thought": text_of(args.get("thought"))}
    if name == "finish":
        message = (
            text_of(args.get("final_thought"))
            or text_of(mapping(args.get("outputs")).get("content"))
            or text_of(args.get("thought"))
        )
        return "finish", {"message": message}
    return None, None


def upgraded(args: dict[str, Any]) -> dict[str, Any]:
    """Old ``edit`` arguments: the editor call written as ``translated_ipython_code``
    (``print(file_editor(**{...}))``) read back, as OpenHands' own ``action_from_dict`` does."""
    code = args.get("translated_ipython_code")
    prefix = "print(file_editor(**"
    if not (isinstance(code, str) and code.startswith(prefix) and code.endswith("))")):
        return args
    try:
        called = ast.literal_eval(code[len(prefix) : -2])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return args
    return {**args, **called} if isinstance(called, dict) else args
