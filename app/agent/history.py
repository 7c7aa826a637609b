"""Rebuilding the model's conversation from the log.

Each ``llm.call`` becomes the assistant turn it produced (its recorded response), followed by
one tool message per tool call: the observation of the action with that ``tool_call_id``, or
the error the controller recorded for a call it could not turn into an action. A reply that
was empty or unusable (no choices, not JSON) is followed by the error it led to, as a user
message (there is no tool call to answer). User messages come in at their place in the log,
and so does the note that the sandbox was restarted (``runtime.restarted``: the agent's
processes are gone). Images an MCP tool returned follow the turn's tool messages as a user
message of ``image_url`` parts (tool messages carry text only). Long observations are cut
down to their head and tail.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from app.events import ACTION_KINDS, OBSERVATION_KINDS
from app.store import RecordedEvent

MAX_OBSERVATION_CHARS = 12_000
PENDING = "(no result yet)"


def _note(error: RecordedEvent) -> dict[str, Any]:
    """An error about the model's own reply, told as a user message."""
    return {"role": "user", "content": observation_text(error)}


def _cut(text: str, limit: int = MAX_OBSERVATION_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters cut ...]\n{text[-half:]}"


def observation_text(event: RecordedEvent) -> str:
    """What the model reads for an observation."""
    p = event.payload
    match event.kind:
        case "run.output":
            text = p.get("output", "")
            if p.get("still_running"):
                return _cut(text)
            status = "timed out" if p.get("timed_out") else f"exit code {p.get('exit_code')}"
            return _cut(text) + f"\n[{status}]"
        case "file.read.output":
            return _cut(p.get("content", ""))
        case "file.edit.output":
            return _cut(p.get("content") or p.get("diff") or f"{p.get('path')} is unchanged")
        case "file.write.output":
            return _cut(p.get("diff") or f"{p.get('path')} written")
        case "mcp.result":
            parts = [_block_text(item) for item in p.get("content", []) if isinstance(item, dict)]
            if not parts and p.get("structured_content") is not None:
                parts = [json.dumps(p["structured_content"], ensure_ascii=False)]
            prefix = "ERROR: " if p.get("is_error") else ""
            return prefix + _cut("\n".join(parts))
        case "error":
            return f"ERROR: {p.get('message', '')}"
        case _:
            return _cut(json.dumps(p))


def _block_text(block: dict[str, Any]) -> str:
    """An MCP content block as text; an image is sent after the tool messages, as an image."""
    kind = block.get("type")
    mime = block.get("mimeType") or block.get("mime_type") or "unknown type"
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "image":
        return f"[image ({mime}): shown below]"
    if kind == "audio":
        return f"[audio ({mime}): not shown]"
    resource = block.get("resource")
    if kind == "resource" and isinstance(resource, dict):
        if "text" in resource:
            return str(resource["text"])
        kind_of = f" ({resource['mimeType']})" if resource.get("mimeType") else ""
        return f"[resource {resource.get('uri', '')}{kind_of}: not shown]"
    if kind == "resource_link":
        return f"[resource: {block.get('uri', '')}]"
    return json.dumps({k: v for k, v in block.items() if k not in ("data", "blob")})


def image_parts(event: RecordedEvent) -> list[dict[str, Any]]:
    """The images of an ``mcp.result`` as OpenAI ``image_url`` parts (base64 data URLs)."""
    if event.kind != "mcp.result":
        return []
    return [
        {
            "type": "image_url",
            "image_url": {
                "url": f"data:{item.get('mimeType') or item.get('mime_type')};"
                f"base64,{item.get('data', '')}"
            },
        }
        for item in event.payload.get("content", [])
        if isinstance(item, dict) and item.get("type") == "image" and item.get("data")
    ]


def to_messages(
    system: str,
    events: Iterable[RecordedEvent],
    cache: dict[int, list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """The conversation for the model. With a ``cache`` (per session), the messages of events
    that can no longer change are built once and reused as the same objects."""
    events = list(events)
    cache = {} if cache is None else cache
    forget_before = 0
    forgotten = 0
    for event in events:
        if event.kind == "agent.condensation":
            forget_before = event.payload["forget_before"]
            forgotten = event.payload.get("forgotten_calls", 0)
    messages: list[dict[str, Any]] = list(
        cache.setdefault(0, [{"role": "system", "content": system}])
    )
    messages += _conversation(events, cache, forget_before, forgotten).messages
    return messages


class _Built(NamedTuple):
    """The messages of some events, and how many of the first events (``final_events``) gave
    the first ``final_messages`` of them for good (nothing later can change those)."""

    messages: list[dict[str, Any]]
    final_events: int
    final_messages: int


def _conversation(
    events: list[RecordedEvent],
    cache: dict[int, list[dict[str, Any]]],
    forget_before: int,
    forgotten: int,
) -> _Built:
    """The messages of ``events`` after the system prompt (see ``to_messages``)."""
    # Keyed by (call seq, id): servers that number calls per reply repeat ids across replies.
    by_tool_call: dict[tuple[int | None, str], RecordedEvent] = {}
    observations: dict[int, RecordedEvent] = {}
    indexed = False

    def index() -> None:  # only needed for turns not built before
        nonlocal indexed
        for event in events:
            if event.kind in ACTION_KINDS and event.payload.get("tool_call_id"):
                by_tool_call[(event.cause, event.payload["tool_call_id"])] = event
            if event.kind in OBSERVATION_KINDS and event.cause is not None:
                observations[event.cause] = event
        indexed = True

    messages: list[dict[str, Any]] = []
    noted = False
    final = True  # every event so far gave its messages for good
    final_events = final_messages = 0
    for position, event in enumerate(events):
        if event.kind == "message" and event.source == "user":
            built = cache.get(event.seq)
            if built is None:
                built = cache[event.seq] = [
                    {"role": "user", "content": event.payload.get("content", "")}
                ]
            messages.extend(built)
        elif event.kind == "runtime.restarted" and event.seq >= forget_before:
            built = cache.get(event.seq)
            if built is None:
                note = event.payload.get("message") or "The sandbox was restarted."
                built = cache[event.seq] = [{"role": "user", "content": f"[{note}]"}]
            messages.extend(built)
        elif event.kind == "llm.call" and _may_have_turn(event):
            if event.seq < forget_before:
                continue
            if forget_before and not noted:
                messages.append(
                    {
                        "role": "user",
                        "content": f"[{forgotten} earlier steps were condensed to fit the "
                        "context window; re-check anything you need from them]",
                    }
                )
                noted = True
            turn = cache.get(event.seq)
            if turn is None:
                if not indexed:
                    index()
                turn = _turn(event, by_tool_call, observations)
                told = not event.payload.get("error") or event.seq in observations
                if told and all(m.get("content") != PENDING for m in turn):  # final: keep
                    cache[event.seq] = turn
                else:
                    final = False
            messages.extend(turn)
        if final:
            final_events, final_messages = position + 1, len(messages)
    return _Built(messages, final_events, final_messages)


class Conversation:
    """``to_messages`` kept up to date as a session's log grows, so a step costs what the
    step added, not the whole history again.

    The messages of the log's first events that can no longer change (user messages, turns
    whose tool results are all in) are kept; each call rebuilds only what follows them. The
    log must be the same events each time, grown at the end (a different log starts over);
    once the conversation was condensed, every call rebuilds it whole (``to_messages``).
    """

    def __init__(self, system: str) -> None:
        self.system = system
        self._reset()

    def _reset(self) -> None:
        self._cache: dict[int, list[dict[str, Any]]] = {}  # by seq: of this log only
        self._frozen: list[dict[str, Any]] = [{"role": "system", "content": self.system}]
        self._frozen_events = 0  # the first events whose messages are in _frozen
        self._seen = 0  # events looked at for a condensation
        self._last_seen: RecordedEvent | None = None
        self._condensed = False

    def messages(self, events: Sequence[RecordedEvent]) -> list[dict[str, Any]]:
        if self._seen and (
            len(events) < self._seen or events[self._seen - 1] is not self._last_seen
        ):
            self._reset()  # not the log we followed
        if len(events) > self._seen:
            self._condensed = self._condensed or any(
                event.kind == "agent.condensation" for event in events[self._seen :]
            )
            self._seen, self._last_seen = len(events), events[-1]
        if self._condensed:
            return to_messages(self.system, events, self._cache)
        tail = list(events[self._frozen_events :])
        built = _conversation(tail, self._cache, 0, 0)
        self._frozen += built.messages[: built.final_messages]
        self._frozen_events += built.final_events
        return [*self._frozen, *built.messages[built.final_messages :]]


def _may_have_turn(call: RecordedEvent) -> bool:
    """A call that answered (or whose unusable reply the model is told about); a call that
    failed for good (auth, quota, ...) is not part of the conversation."""
    payload = call.payload
    return not payload.get("error") or payload.get("error_kind") == "bad_response"


def _turn(
    call: RecordedEvent,
    by_tool_call: dict[tuple[int | None, str], RecordedEvent],
    observations: dict[int, RecordedEvent],
) -> list[dict[str, Any]]:
    response = call.payload.get("response") or {}
    tool_calls = response.get("tool_calls") or []
    content = response.get("content") or ""
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if not tool_calls:
        told = observations.get(call.seq)  # an empty or unusable reply's error
        if told is None:
            return [] if call.payload.get("error") else [assistant]
        # No empty assistant turn: several providers refuse one.
        return [*([assistant] if content.strip() else []), _note(told)]
    assistant["tool_calls"] = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for c in tool_calls
    ]
    turn = [assistant]
    images: list[dict[str, Any]] = []
    invalid = observations.get(call.seq)  # the error for calls that never became actions
    for c in tool_calls:
        action = by_tool_call.get((call.seq, c["id"]))
        if action is None:
            text = observation_text(invalid) if invalid else "ERROR: this tool call was not run"
        elif action.kind == "think":
            text = "Your thought has been logged."
        elif action.kind == "finish":
            text = "The task is marked as done."
        elif action.seq in observations:
            text = observation_text(observations[action.seq])
            images += image_parts(observations[action.seq])
        else:
            text = PENDING
        turn.append({"role": "tool", "tool_call_id": c["id"], "name": c["name"], "content": text})
    if images:
        intro = {"type": "text", "text": "The images the tool calls above returned:"}
        turn.append({"role": "user", "content": [intro, *images]})
    return turn
