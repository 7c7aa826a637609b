"""A session as one ATIF trajectory (``chronicle export --format atif SESSION``).

``trajectory`` groups a session's events into steps (``steps.py`` says what each becomes):
a ``user`` or ``system`` step per message, an ``agent`` step per model call with the actions
it led to and their observations, an ``agent`` step with ``llm_call_count`` 0 per action no
model call caused. With the prompts' stored messages, the system prompt of the session's
first model call is a ``system`` step first. The root: ``schema_version`` ``ATIF-v1.7``,
``session_id`` the session's id, ``agent`` the configured agent (``name``, Chronicle's
``version``, ``model_name``), ``final_metrics`` the steps' totals, and
``extra.chronicle`` the session's title and how it ended (its last ``agent.state``).

An imported session gets back what its import kept (``steps.overlay``): each step, tool call
and result as the file had it, and the root's members from ``config.imported.kept``.

Not carried (no ATIF field, and nothing a reader would look for in ``extra``): the runtime's
and workspace's events, lifecycle states but the last, scores, audit events, the per-call
prompt beyond the first system prompt, the events' seq, ids, causes and hashes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import app
from app.events.registry import ACTION_KINDS, OBSERVATION_KINDS
from app.interchange.atif.schema import WRITTEN_VERSION
from app.interchange.atif.steps import (
    Item,
    agent_step,
    final_metrics,
    overlay,
    text_step,
    timestamp,
)

#: The agent's name when the session's configuration names none.
DEFAULT_AGENT = "chronicle"
#: The root's members in the order Harbor's model declares them.
ROOT_KEYS = (
    "schema_version",
    "session_id",
    "trajectory_id",
    "agent",
    "steps",
    "notes",
    "final_metrics",
    "continued_trajectory_ref",
    "extra",
    "subagent_trajectories",
)


def trajectory(
    session_id: UUID,
    items: Sequence[Item],
    messages: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The session of ``items`` (its events in seq order, ``session.created`` first) as an
    ATIF trajectory; ``messages`` are the stored prompt messages by hash, if read."""
    config: Mapping[str, Any] = {}
    if items and items[0].kind == "session.created":
        found = items[0].payload.get("config")
        config = found if isinstance(found, Mapping) else {}
    steps = session_steps(items, messages)
    return root(session_id, config, steps, items)


def session_steps(
    items: Sequence[Item], messages: Mapping[str, Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The steps, and for each the item it was made from (see ``trajectory``)."""
    return [step for step, _ in steps_with_items(items, messages)]


def steps_with_items(
    items: Sequence[Item], messages: Mapping[str, Mapping[str, Any]] | None = None
) -> list[tuple[dict[str, Any], Item]]:
    by_seq = {item.seq: item for item in items}
    caused: dict[int, list[Item]] = {}
    for item in items:
        if item.cause is not None:
            caused.setdefault(item.cause, []).append(item)
    answers = {
        item.cause: item
        for item in items
        if item.kind in OBSERVATION_KINDS
        and item.cause is not None
        and by_seq.get(item.cause, item).kind in ACTION_KINDS
    }
    out: list[tuple[dict[str, Any], Item]] = []
    system = _system_prompt(items, messages)
    if system is not None:
        out.append((system, items[0]))
    for item in items:
        number = len(out) + 1
        if item.kind == "message":
            caller = by_seq.get(item.cause) if item.cause is not None else None
            if item.source == "agent" and caller is not None and caller.kind == "llm.call":
                continue  # the reply's text, already the step's message
            out.append((text_step(item, number), item))
        elif item.kind == "llm.call":
            followers = caused.get(item.seq, [])
            actions = [f for f in followers if f.kind in ACTION_KINDS]
            direct = [f for f in followers if f.kind in OBSERVATION_KINDS]
            out.append((agent_step(number, item, actions, answers, direct), item))
        elif item.kind in ACTION_KINDS:
            caller = by_seq.get(item.cause) if item.cause is not None else None
            if caller is not None and caller.kind == "llm.call":
                continue
            out.append((agent_step(number, None, [item], answers), item))
    return out


def root(
    session_id: UUID,
    config: Mapping[str, Any],
    steps: list[dict[str, Any]],
    items: Sequence[Item],
) -> dict[str, Any]:
    """The trajectory around ``steps``, and what an import kept of the file's root."""
    agent = {
        "name": str(config.get("agent") or DEFAULT_AGENT),
        "version": app.__version__,
        "model_name": config.get("model"),
    }
    own: dict[str, Any] = {"title": _title(items)}
    last = next((i for i in reversed(items) if i.kind == "agent.state"), None)
    if last is not None:
        own["state"] = last.payload.get("state")
        if last.payload.get("reason"):
            own["reason"] = last.payload.get("reason")
    built = {
        "schema_version": WRITTEN_VERSION,
        "session_id": str(session_id),
        "agent": {key: value for key, value in agent.items() if value is not None},
        "steps": steps,
        "final_metrics": final_metrics(steps),
        "extra": {"chronicle": {k: v for k, v in own.items() if v is not None}},
    }
    imported = config.get("imported")
    held = imported.get("kept") if isinstance(imported, Mapping) else None
    trajectory_kept = held.get("trajectory") if isinstance(held, Mapping) else None
    document = overlay(built, trajectory_kept if isinstance(trajectory_kept, dict) else None)
    order = {key: index for index, key in enumerate(ROOT_KEYS)}
    return dict(sorted(document.items(), key=lambda pair: order.get(pair[0], len(order))))


def _title(items: Sequence[Item]) -> str | None:
    if items and items[0].kind == "session.created":
        title = items[0].payload.get("title")
        return str(title) if title else None
    return None


def _system_prompt(
    items: Sequence[Item], messages: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Any] | None:
    """The system prompt of the session's first model call, as step 1 (when read)."""
    if messages is None:
        return None
    first = next((item for item in items if item.kind == "llm.call"), None)
    if first is None or "imported" in first.payload:
        return None
    hashes = first.payload.get("prompt") or []
    message = messages.get(str(hashes[0])) if hashes else None
    if not message or message.get("role") != "system":
        return None
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    step = {"step_id": 1, "timestamp": timestamp(items[0]), "source": "system"}
    step["message"] = str(content or "")
    return {key: value for key, value in step.items() if value is not None}
