"""A replay's result in words, for the terminal (``chronicle replay`` prints this)."""

from __future__ import annotations

import json
from typing import Any

from app.replay.divergence import (
    ActionDivergence,
    Divergence,
    MissingCall,
    OutcomeDivergence,
    RedactedDivergence,
    RequestDivergence,
)
from app.replay.engine import ReplayResult


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else f"{text[:200]}..."


def _indented(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line for line in text.rstrip("\n").splitlines()]


def describe_request(divergence: RequestDivergence) -> list[str]:
    lines: list[str] = []
    if divergence.message is not None:
        change = divergence.message
        roles = (
            change.recorded_role
            if change.recorded_role == change.new_role
            else f"{change.recorded_role or 'none'} -> {change.new_role or 'none'}"
        )
        lines.append(f"  prompt message {change.index} ({roles}):")
        lines += _indented(change.diff)
    if divergence.tools is not None:
        tools = divergence.tools
        for label, names in (
            ("removed", tools.removed),
            ("added", tools.added),
            ("changed", tools.changed),
        ):
            if names:
                lines.append(f"  tools {label}: {', '.join(names)}")
        if tools.diff:
            lines += _indented(tools.diff)
    if divergence.params is not None:
        params = divergence.params
        for key in sorted(set(params.recorded) | set(params.new)):
            old, new = params.recorded.get(key), params.new.get(key)
            if old != new:
                lines.append(f"  {key}: recorded {_value(old)}, replay {_value(new)}")
    return lines


def describe_divergence(divergence: Divergence) -> list[str]:
    """The divergence: its sentence, then the difference itself."""
    lines = [f"diverged ({divergence.kind}): {divergence.summary}"]
    if isinstance(divergence, RequestDivergence):
        lines.append(f"  recorded call at seq {divergence.recorded_seq}")
        lines += describe_request(divergence)
    elif isinstance(divergence, ActionDivergence):
        lines.append(f"  recorded at seq {divergence.recorded_seq}, consequence {divergence.index}")
        if divergence.recorded is None or divergence.new is None:
            lines.append(f"  recorded: {_value(divergence.recorded)}")
            lines.append(f"  replay:   {_value(divergence.new)}")
        for change in divergence.fields:
            lines.append(
                f"  {change.field}: recorded {_value(change.recorded)}, replay {_value(change.new)}"
            )
    elif isinstance(divergence, MissingCall):
        lines.append(f"  next recorded call at seq {divergence.recorded_seq}")
    elif isinstance(divergence, OutcomeDivergence):
        lines.append(f"  recorded: {divergence.recorded_state} ({divergence.recorded_reason})")
        lines.append(f"  replay:   {divergence.new_state} ({divergence.new_reason})")
    elif isinstance(divergence, RedactedDivergence):
        for part in divergence.parts:
            why = part.reason or "no redaction record says why"
            lines.append(f"  redacted: seq {part.seq} {part.path or '(the whole event)'}: {why}")
        lines.append(
            f"  a replay cannot go past seq {divergence.recorded_seq}; a fork before it can go "
            "on live (--on-divergence fork)"
        )
    return lines


def _differences(differences: list[RequestDivergence]) -> list[str]:
    """The request differences a positional replay reported, the same change at several
    calls shown once (a changed system prompt differs at every call)."""
    groups: list[tuple[list[int], str, list[str]]] = []
    for difference in differences:
        what = difference.summary.split(": ", 1)[-1]
        details = describe_request(difference)
        if groups and groups[-1][1] == what and groups[-1][2] == details:
            groups[-1][0].append(difference.step)
        else:
            groups.append(([difference.step], what, details))
    lines: list[str] = []
    for steps, what, details in groups:
        calls = (
            f"model call {steps[0]}"
            if len(steps) == 1
            else (f"model calls {', '.join(str(step) for step in steps)}")
        )
        lines.append(f"request differs (reported, served anyway) at {calls}: {what}")
        lines += details
    return lines


def describe(result: ReplayResult) -> str:
    """What a person reads after ``chronicle replay``."""
    head = (
        f"replay {result.session_id} of {result.replay_of} ({result.mode}): "
        f"{result.steps_matched} of {result.steps_recorded} model calls matched, "
        f"{result.steps_served} served, {result.model_calls} made, {result.seconds:.2f} s"
    )
    lines = [head]
    lines += _differences(result.differences)
    if result.divergence is not None:
        lines += describe_divergence(result.divergence)
    elif result.differences:
        lines.append(f"not stopped: ended {result.outcome} ({result.recorded_outcome} recorded)")
    else:
        lines.append(f"matched: ended {result.outcome} as recorded")
    return "\n".join(lines)
