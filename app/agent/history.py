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
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, NamedTuple
from uuid import UUID

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
    the first ``final_messages`` of them for good (nothing later can change those). ``marks``
    says, for each message, the event it came from (``_mark``)."""

    messages: list[dict[str, Any]]
    final_events: int
    final_messages: int
    marks: list[int]


#: What gave a message (with its event's seq, ``_mark``): a user's message (kept whatever a
#: condensation says), a restart note, a model turn (left out before ``forget_before``).
_USER, _RESTART, _TURN = 0, 1, 2


def _mark(seq: int, kind: int) -> int:
    return seq * 4 + kind


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
    marks: list[int] = []
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
            marks += [_mark(event.seq, _USER)] * len(built)
        elif event.kind == "runtime.restarted" and event.seq >= forget_before:
            built = cache.get(event.seq)
            if built is None:
                note = event.payload.get("message") or "The sandbox was restarted."
                built = cache[event.seq] = [{"role": "user", "content": f"[{note}]"}]
            messages.extend(built)
            marks += [_mark(event.seq, _RESTART)] * len(built)
        elif event.kind == "llm.call" and _may_have_turn(event):
            if event.seq < forget_before:
                continue
            if forget_before and not noted:
                messages.append(_condensed_note(forgotten))
                marks.append(-1)
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
            marks += [_mark(event.seq, _TURN)] * len(turn)
        if final:
            final_events, final_messages = position + 1, len(messages)
    return _Built(messages, final_events, final_messages, marks)


def _condensed_note(forgotten: int) -> dict[str, Any]:
    return {
        "role": "user",
        "content": f"[{forgotten} earlier steps were condensed to fit the "
        "context window; re-check anything you need from them]",
    }


class Conversation:
    """``to_messages`` kept up to date as a session's log grows, so a step costs what the
    step added, not the whole history again, and memory holds the conversation, not the log.

    Each call gives the log from some event on, with every event after those the previous
    call gave (the controller gives its window of recent events); the events are taken in
    by seq. The messages of events that can no longer change (user messages, turns whose
    tool results are all in) are kept, each with the seq it came from, so a condensation
    leaves the older turns out without the log; only the events after them are kept, and
    their messages rebuilt each call. Another log (another event at the last seq taken in)
    starts over, and must then be given from its first event.
    """

    def __init__(self, system: str) -> None:
        self.system = system
        self._system = {"role": "system", "content": system}
        self._reset()

    def _reset(self) -> None:
        self._cache: dict[int, list[dict[str, Any]]] = {}  # by seq: of the events kept only
        self._frozen: list[dict[str, Any]] = []  # messages that can no longer change
        self._marks = array("q")  # for each of them, what gave it (``_mark``)
        self._tail: list[RecordedEvent] = []  # the events after those that gave _frozen
        self._last: tuple[int, UUID] | None = None  # seq and id of the last event taken in
        self._forget = (0, 0)  # the last condensation's forget_before and forgotten_calls
        self._pruned = 0  # _frozen holds no turn or restart before this seq
        #: what ``messages`` gave last (uncondensed): the system message, _frozen, the tail's
        self._shown: list[dict[str, Any]] = [self._system]
        #: the payload of the last llm.call taken in (the gateway continues its prompt)
        self.last_call: Mapping[str, Any] | None = None

    def messages(self, events: Sequence[RecordedEvent]) -> list[dict[str, Any]]:
        """The conversation after ``events``. Until a condensation it is the same list each
        call, changed in place (the previous call's tail messages replaced by this one's), so
        a step does not copy the whole conversation: a caller reads it before the next call
        and never changes it (the gateway keeps lists of its own)."""
        self._take(events)
        built = _conversation(self._tail, self._cache, 0, 0)
        final = built.final_messages
        frozen = len(self._frozen)  # the messages of _shown that stay, after the system's
        if built.final_events:
            self._frozen += built.messages[:final]
            self._marks.extend(built.marks[:final])
            for event in self._tail[: built.final_events]:
                self._cache.pop(event.seq, None)  # _frozen holds its messages now
            del self._tail[: built.final_events]
        if self._forget[0] > self._pruned:
            self._prune(self._forget[0])
        if self._forget[0]:
            return self._condensed(built.messages[final:], built.marks[final:])
        shown = self._shown  # [system, *_frozen before this call, *the last call's tail]
        del shown[1 + frozen :]
        shown += built.messages  # the newly frozen ones, then the tail
        return shown

    def _condensed(self, rest: list[dict[str, Any]], marks: list[int]) -> list[dict[str, Any]]:
        """As ``to_messages`` gives a condensed log: the user's messages, the restarts and
        turns from ``forget_before`` on, a note before the first of those turns."""
        forget_before, forgotten = self._forget
        messages = [self._system]
        noted = False
        for message, mark in zip(chain(self._frozen, rest), chain(self._marks, marks), strict=True):
            seq, kind = divmod(mark, 4)
            if kind != _USER and seq < forget_before:
                continue
            if kind == _TURN and not noted:
                messages.append(_condensed_note(forgotten))
                noted = True
            messages.append(message)
        return messages

    def _prune(self, forget_before: int) -> None:
        """Drop the kept turns and restarts a condensation left out: a later one forgets
        from further on, so they are never shown again."""
        kept = [
            (message, mark)
            for message, mark in zip(self._frozen, self._marks, strict=True)
            if mark % 4 == _USER or mark // 4 >= forget_before
        ]
        self._frozen = [message for message, _ in kept]
        self._marks = array("q", [mark for _, mark in kept])
        self._pruned = forget_before

    def _take(self, events: Sequence[RecordedEvent]) -> None:
        """Take in the events not taken in before (see the class)."""
        start = self._new_from(events)
        if start < len(events) and events[start].seq != (self._last[0] if self._last else 0) + 1:
            raise ValueError(
                f"the conversation was given events from seq {events[start].seq} after those "
                f"up to {self._last[0] if self._last else 0}: every event must be given once"
            )
        for event in events[start:]:
            if event.kind == "agent.condensation":
                self._forget = (
                    event.payload["forget_before"],
                    event.payload.get("forgotten_calls", 0),
                )
            elif event.kind == "llm.call":
                self.last_call = event.payload
            self._tail.append(event)
        if start < len(events):
            self._last = (events[-1].seq, events[-1].event_id)

    def _new_from(self, events: Sequence[RecordedEvent]) -> int:
        """The index of the first event of ``events`` not taken in yet (another log: 0,
        after starting over)."""
        if self._last is None:
            return 0
        seq, event_id = self._last
        if not events:
            self._reset()  # an empty log is not the one followed
            return 0
        at = seq - events[0].seq
        if 0 <= at < len(events) and events[at].seq == seq:
            if events[at].event_id == event_id:
                return at + 1
        elif at < 0:
            return 0  # all new (or a gap: _take says so)
        self._reset()
        return 0


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
