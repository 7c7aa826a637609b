"""Finding events inside one session: by words, by what they are (commands, edits, model
calls...), and errors, however the session failed. Pure code over events as the API returns
them (payloads whole, blobs resolved), so a search finds what the reader would see; the route
reads the session a page at a time and asks ``match`` of each event."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field

from app.events.observations import answer_failure

#: What the kind filter offers, and the kinds each stands for. An observation belongs to the
#: group of the action it answers (a command's output is found with the commands).
KIND_GROUPS: dict[str, frozenset[str]] = {
    "messages": frozenset({"message"}),
    "commands": frozenset({"run", "run.output"}),
    "files": frozenset(
        {
            "file.read",
            "file.read.output",
            "file.write",
            "file.write.output",
            "file.edit",
            "file.edit.output",
            "workspace.diff",
        }
    ),
    "model_calls": frozenset({"llm.call"}),
    "tools": frozenset({"mcp.call", "mcp.result"}),
    "thoughts": frozenset({"think", "finish"}),
    "annotations": frozenset({"annotation"}),
    "redactions": frozenset({"redaction"}),
}
KindGroup = Literal[
    "messages",
    "commands",
    "files",
    "model_calls",
    "tools",
    "thoughts",
    "annotations",
    "redactions",
    "errors",
]
#: The longest text looked for, and the most matches a search returns (the count goes on).
MAX_QUERY = 200
MAX_MATCHES = 2000
#: Characters of context either side of a match in its snippet.
CONTEXT = 60


class EventQuery(BaseModel):
    """A search of one session: every given part must match (``text``: case-insensitive, in
    any text of the payload, not in its field names)."""

    text: str | None = Field(default=None, min_length=1, max_length=MAX_QUERY)
    kind: KindGroup | None = None


class Found(NamedTuple):
    #: The text around the first place the words were found (or the event's headline).
    snippet: str
    error: bool


class EventMatch(BaseModel):
    seq: int
    kind: str
    created_at: datetime
    snippet: str
    #: Whether the event records something going wrong (``is_error``).
    error: bool


class SearchResult(BaseModel):
    matches: list[EventMatch]
    #: Every match in the session; more than ``len(matches)`` when the list was cut.
    total: int
    #: The session's last seq when it was searched.
    last_seq: int


def is_error(kind: str, payload: dict[str, Any]) -> bool:
    """Whether the event records something going wrong: an error, a command that failed or
    timed out, a model call that failed, a tool that reported an error, a sandbox that did
    not start, the agent stopping on an error."""
    if kind == "runtime.failed":
        return True
    if kind in ("error", "run.output", "mcp.result"):
        return answer_failure(kind, payload) is not None
    if kind == "llm.call":
        return bool(payload.get("error"))
    if kind == "agent.state":
        return payload.get("state") == "error"
    return False


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a payload value (field names left out)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _snippet(text: str, at: int, length: int) -> str:
    start, end = max(0, at - CONTEXT), min(len(text), at + length + CONTEXT)
    body = " ".join(text[start:end].split())
    return ("…" if start else "") + body + ("…" if end < len(text) else "")


def headline(kind: str, payload: dict[str, Any]) -> str:
    """A line that says what the event is, for a match found by its kind alone."""
    if kind == "redaction":  # its path alone would say nothing
        part = payload.get("path") or "the whole payload"
        who = payload.get("user") or "?"
        return f"#{payload.get('target_seq')} {part} redacted by {who}: {payload.get('reason')}"
    for field in ("command", "path", "content", "message", "thought", "state", "model"):
        value = payload.get(field)
        if isinstance(value, str) and value:
            return _snippet(value, 0, 0)
    return kind


def match(kind: str, payload: dict[str, Any], query: EventQuery) -> Found | None:
    """What of the event matches ``query``, or None."""
    error = is_error(kind, payload)
    if query.kind == "errors" and not error:
        return None
    if query.kind not in (None, "errors") and kind not in KIND_GROUPS[query.kind]:
        return None
    if query.text is None:
        return Found(headline(kind, payload), error)
    wanted = query.text.lower()
    for text in _strings(payload):
        at = text.lower().find(wanted)
        if at >= 0:
            return Found(_snippet(text, at, len(wanted)), error)
    return None
