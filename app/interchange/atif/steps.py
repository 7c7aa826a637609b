"""Chronicle's events as ATIF's objects: one step, tool call or result at a time.

Pure: each function takes the events it needs (``Item``: kind, source, seq, cause, payload,
time) and returns the ATIF object as JSON (a dict without null members, as Harbor writes
them). ``export.py`` groups a session's events into steps with them, and the importer
(``to_events.py``) calls them too, on the events it just made of a file, to find what of
each object those events do not reproduce: that is kept on the event (``kept``), and laid
over what is built here (``overlay``), so an imported object is exported as it was read.

What an event becomes:

- ``message`` from the user or the system: a ``user`` or ``system`` step, its text the
  ``message``.
- ``llm.call``: an ``agent`` step. ``message`` is the response's text (``""`` without one),
  ``reasoning_content`` its reasoning, ``model_name`` the model that answered,
  ``tool_calls`` its tool calls (``arguments`` parsed; text that is no JSON object gives
  ``{}`` and ``extra.chronicle.raw_arguments``), ``metrics`` its usage (``prompt_tokens``
  counts cached ones too, as in both) and cost, ``llm_call_count`` 1, and
  ``extra.chronicle`` what ATIF has no field for: ``finish_reason``, the response's ``id``,
  ``latency_ms``, ``attempts`` (when not 1), ``params``, ``error`` and ``error_kind``.
- An action caused by that call: its tool call (found by ``tool_call_id``); one whose call
  the response does not hold (prompt tool calling) gets a tool call of its own,
  ``function_name`` its kind and ``arguments`` its fields. Its observation is the step's
  result with ``source_call_id`` that id: the text (a command's output, a file's content or
  diff, an MCP result's text parts, an error's message) in ``content``, the rest (exit code,
  timeout, truncation, error type) in ``extra.chronicle``.
- An action no model call caused (the user's command): an ``agent`` step with
  ``llm_call_count`` 0 (``extra.chronicle.source`` says who asked when not the agent).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

#: The keys of each object in the order Harbor's models declare them (how a step is written).
STEP_KEYS = (
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "reasoning_effort",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "is_copied_context",
    "llm_call_count",
    "extra",
)
#: An action's own fields, not its arguments (an action without a tool call of its own).
_NOT_ARGUMENTS = frozenset({"thought", "tool_call_id", "imported", "replayed_from", "user"})


class Item(NamedTuple):
    """One event as the export reads it. ``created_at`` is None for events not yet recorded
    (the importer's), and an imported event's time is when it was imported, never written."""

    kind: str
    source: str
    seq: int
    cause: int | None
    payload: Mapping[str, Any]
    created_at: datetime | None = None


def kept(item: Item | None, part: str) -> dict[str, Any] | None:
    """What the import of ``item`` kept of its ATIF ``part`` (``step``, ``tool_call``,
    ``result``), or None."""
    if item is None:
        return None
    origin = item.payload.get("imported")
    held = origin.get("kept") if isinstance(origin, Mapping) else None
    value = held.get(part) if isinstance(held, Mapping) else None
    return value if isinstance(value, dict) else None


def overlay(built: dict[str, Any], held: Mapping[str, Any] | None) -> dict[str, Any]:
    """``built`` with what was kept laid over it: a kept null removes the member."""
    if not held:
        return built
    result = dict(built)
    for key, value in held.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def leftover(original: Mapping[str, Any], built: Mapping[str, Any]) -> dict[str, Any] | None:
    """What ``overlay`` must lay over ``built`` to give ``original`` (None: nothing)."""
    held = {
        key: value
        for key, value in original.items()
        if value is not None and not same(built.get(key), value)
    }
    held.update({key: None for key in built if original.get(key) is None})
    return held or None


def same(one: Any, other: Any) -> bool:
    """Equal as JSON, types and all (``1`` is not ``1.0`` nor ``true``)."""
    return _canonical(one) == _canonical(other)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=True)


def timestamp(item: Item) -> str | None:
    if item.created_at is None or "imported" in item.payload:
        return None
    return item.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def text_step(item: Item, step_id: int) -> dict[str, Any]:
    """A message's step: ``user``, ``system``, or an ``agent`` step with no model call."""
    source = item.source if item.source in ("user", "system") else "agent"
    step = {
        "step_id": step_id,
        "timestamp": timestamp(item),
        "source": source,
        "message": str(item.payload.get("content", "")),
    }
    if source == "agent":
        step["llm_call_count"] = 0
    return _ordered(overlay(_present(step), kept(item, "step")))


def agent_step(
    step_id: int,
    call: Item | None,
    actions: Sequence[Item],
    answers: Mapping[int, Item],
    direct: Sequence[Item] = (),
) -> dict[str, Any]:
    """The step of a model ``call`` (None: actions no model call caused), its ``actions``,
    their observations (``answers``, by the action's seq) and the observations the call
    itself caused (``direct``: a tool call that could not be read)."""
    main = call or actions[0]
    response: Mapping[str, Any] = {}
    if call is not None:
        response = _mapping(call.payload.get("response"))
    by_id = {str(a.payload["tool_call_id"]): a for a in actions if a.payload.get("tool_call_id")}
    calls: list[dict[str, Any]] = []
    used: set[int] = set()
    ids: dict[int, str] = {}
    for raw in response.get("tool_calls") or []:
        raw = _mapping(raw)
        action = by_id.get(str(raw.get("id")))
        if action is not None:
            used.add(action.seq)
            ids[action.seq] = str(raw.get("id"))
        calls.append(tool_call(raw, action))
    for action in actions:
        if action.seq not in used:
            call_id = str(action.payload.get("tool_call_id") or f"call_{action.seq}")
            ids[action.seq] = call_id
            calls.append(own_tool_call(action, call_id))
    results = [
        result(answers[action.seq], ids.get(action.seq))
        for action in actions
        if action.seq in answers
    ]
    call_ids = {call["tool_call_id"] for call in calls}
    for answer in direct:
        named = answer.payload.get("tool_call_id")
        results.append(result(answer, str(named) if named in call_ids else None))
    step: dict[str, Any] = {
        "step_id": step_id,
        "timestamp": timestamp(main),
        "source": "agent",
        "model_name": response.get("model") or (call.payload.get("model") if call else None),
        "message": response.get("content") or "",
        "reasoning_content": response.get("reasoning_content"),
        "tool_calls": calls or None,
        "observation": {"results": results} if results else None,
        "metrics": metrics(call) if call is not None else None,
        "llm_call_count": 1 if call is not None else 0,
        "extra": {"chronicle": own} if (own := _call_extra(call, main)) else None,
    }
    return _ordered(overlay(_present(step), kept(main, "step")))


def tool_call(raw: Mapping[str, Any], action: Item | None) -> dict[str, Any]:
    """A tool call of a model's response (``id``, ``name``, ``arguments`` as JSON text)."""
    text = raw.get("arguments")
    try:
        arguments = json.loads(text) if isinstance(text, str) else text
    except (json.JSONDecodeError, RecursionError):
        arguments = None
    call: dict[str, Any] = {
        "tool_call_id": str(raw.get("id", "")),
        "function_name": str(raw.get("name", "")),
        "arguments": arguments if isinstance(arguments, dict) else {},
    }
    if not isinstance(arguments, dict) and text not in (None, ""):
        call["extra"] = {"chronicle": {"raw_arguments": text}}
    return overlay(call, kept(action, "tool_call"))


def own_tool_call(action: Item, call_id: str) -> dict[str, Any]:
    """The tool call of an action whose model response holds none."""
    arguments = {k: v for k, v in action.payload.items() if k not in _NOT_ARGUMENTS}
    call = {"tool_call_id": call_id, "function_name": action.kind, "arguments": arguments}
    return overlay(call, kept(action, "tool_call"))


def result(answer: Item, call_id: str | None) -> dict[str, Any]:
    """An observation as a result of the step of its action."""
    payload = answer.payload
    text, rest = _answer(answer.kind, payload)
    worth = {k: v for k, v in rest.items() if not (v is None or v is False or v == "")}
    own = {"kind": answer.kind, **worth}
    built = {
        "source_call_id": call_id,
        "content": text,
        "extra": {"chronicle": own},
    }
    return overlay(_present(built), kept(answer, "result"))


def metrics(call: Item) -> dict[str, Any] | None:
    usage = _mapping(call.payload.get("usage"))
    extra = {
        "cache_creation_input_tokens": usage.get("cache_creation_tokens"),
        "reasoning_tokens": usage.get("reasoning_tokens"),
    }
    found = {
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cached_tokens": usage.get("cached_tokens"),
        "cost_usd": call.payload.get("cost_usd"),
        "extra": _present(extra) or None,
    }
    return _present(found) or None


def final_metrics(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The totals of the steps' metrics (a total none of them states is left out)."""
    totals: dict[str, Any] = {}
    for name, total in (
        ("prompt_tokens", "total_prompt_tokens"),
        ("completion_tokens", "total_completion_tokens"),
        ("cached_tokens", "total_cached_tokens"),
        ("cost_usd", "total_cost_usd"),
    ):
        values = [
            value
            for step in steps
            if isinstance(step.get("metrics"), Mapping)
            and isinstance(value := step["metrics"].get(name), int | float)
            and not isinstance(value, bool)
        ]
        if values:
            totals[total] = sum(values)
    totals["total_steps"] = len(steps)
    return totals


def _answer(kind: str, payload: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """An observation's text, and its other fields worth keeping."""
    if kind == "run.output":
        rest = {k: payload.get(k) for k in ("exit_code", "timed_out", "truncated", "still_running")}
        return str(payload.get("output", "")), rest
    if kind == "file.read.output":
        return str(payload.get("content", "")), {"path": payload.get("path")}
    if kind == "file.write.output":
        return str(payload.get("diff", "")), {"path": payload.get("path")}
    if kind == "file.edit.output":
        content = payload.get("content") or ""
        if content:
            return str(content), {"path": payload.get("path")}
        return str(payload.get("diff", "")), {"path": payload.get("path"), "diff": True}
    if kind == "mcp.result":
        parts = payload.get("content") or []
        text = "".join(
            str(part.get("text", ""))
            for part in parts
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
        rest = {k: payload.get(k) for k in ("structured_content", "is_error", "truncated")}
        return text, rest
    if kind == "error":
        return str(payload.get("message", "")), {"error_type": payload.get("error_type")}
    if kind == "imported.output":
        return str(payload.get("content", "")), {"observation": payload.get("observation")}
    fields = {k: v for k, v in payload.items() if k != "imported"}
    return json.dumps(fields, ensure_ascii=False), {}


def _call_extra(call: Item | None, main: Item) -> dict[str, Any]:
    if call is None:
        return {"source": main.source} if main.source != "agent" else {}
    payload = call.payload
    response = _mapping(payload.get("response"))
    own = {
        "finish_reason": response.get("finish_reason"),
        "response_id": response.get("id"),
        "latency_ms": payload.get("latency_ms"),
        "attempts": payload.get("attempts") if payload.get("attempts", 1) != 1 else None,
        "params": payload.get("params") or None,
        "error": payload.get("error"),
        "error_kind": payload.get("error_kind"),
    }
    return _present(own)


def _present(value: Mapping[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if item is not None}


def _ordered(step: Mapping[str, Any]) -> dict[str, Any]:
    order = {key: index for index, key in enumerate(STEP_KEYS)}
    return dict(sorted(step.items(), key=lambda pair: order.get(pair[0], len(order))))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
