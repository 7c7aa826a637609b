"""The shared model of an imported recording: the events it becomes, in order, ready to append.

Both importers (``openhands.py``, ``swe_agent.py``) read a file into a ``SessionBuilder``:
each thing the other agent recorded becomes a Chronicle event marked with its
``ImportOrigin``, appended in the order it happened. What the builder does the same way for
both formats:

- **Identity.** A session's id is a UUID derived from the format and the sha256 of the bytes
  it was read from (and the attempt, of a file holding several); each event's id from the
  session's id and its seq. Importing the same
  recording again therefore names the same session and the same events: the writer
  (``writing.py``) finds them recorded and writes nothing.
- **Model calls.** Every response of the other agent's model becomes an ``llm.call`` before
  what it led to: its text verbatim (``response.content``), and its actions as tool calls in
  Chronicle's own tools where they correspond (``execute_bash``, ``str_replace_editor``,
  ``think``, ``finish``), else under the tool name and arguments as recorded. The action
  recorded for a tool call is the one Chronicle's agent makes of that very tool call
  (``app.agent.calls.to_action``, with the agent's argument coercion: ``"false"`` is false),
  so a replay of the session follows the recording for as long as every action maps; a tool
  call Chronicle's agent cannot run is kept as an ``imported`` action. The messages the model
  was sent, when the recording has them, are stored like a live call's prompt (content
  addressed) and fingerprinted the same way; the parameters are not recorded (``{}``).
- **Cost.** A call's ``cost_usd`` is what the recording says that call cost, else None
  (unpriced: the views count it in ``unpriced_calls``, never as spend). Its ``latency_ms`` is
  what the recording says that response took, else None — not 0, which would pull the
  latency percentiles of every report and view down (SQL's percentiles skip NULLs).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from app.agent.calls import InvalidToolCall, to_action
from app.agent.tools import BUILTIN_TOOLS
from app.errors import ChronicleError
from app.events import (
    Action,
    AgentState,
    Event,
    ImportedAction,
    ImportOrigin,
    LlmCall,
    LlmResponse,
    LlmUsage,
    SessionCreated,
    ToolCall,
    canonical_json,
)
from app.events.conversation import AgentStateName, LimitName
from app.llm.fingerprint import content_hash, fingerprint, stable_hash

#: The namespace of imported sessions' ids (uuid5 of "<format>:<sha256 of the bytes>").
IMPORT_NAMESPACE = uuid.UUID("6f1d7a52-3c1e-4b8e-9a57-0c6b2f0e4d11")

#: The workspace an imported session says it had (the recordings' agents ran elsewhere).
WORKSPACE = "/workspace"


class ImportProblem(ChronicleError, ValueError):
    """The recording cannot be imported; the message names the file, the item and the field."""

    def __init__(
        self,
        file: str,
        problem: str,
        *,
        line: int | None = None,
        attempt: int | None = None,
        index: int | None = None,
        field: str | None = None,
    ) -> None:
        where = [file]
        if line is not None:
            where.append(f"line {line}")
        if attempt is not None:
            where.append(f"attempt {attempt}")
        if index is not None:
            where.append(f"item {index}")
        if field:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {problem}")
        self.file = file
        self.line = line
        self.index = index
        self.field = field


class ImportedSession(BaseModel):
    """One recording as the Chronicle session it becomes: its events from seq 1
    (``session.created`` first) and the prompt messages its model calls name, by hash."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    session_id: uuid.UUID
    title: str
    format: str
    file: str
    events: list[Event]
    #: sha256 hex -> canonical JSON of a prompt message (or a tool list), to store first
    messages: dict[str, str]

    @property
    def model_calls(self) -> int:
        return sum(1 for event in self.events if event.kind == "llm.call")


class ToolUse(BaseModel):
    """One action of the other agent as its model asked for it: ``name`` and ``arguments``
    as recorded, and the Chronicle tool (``tool``, ``tool_arguments``) it corresponds to, if
    any."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    arguments: dict[str, Any]
    tool: str | None = None
    tool_arguments: dict[str, Any] | None = None

    def tool_call(self) -> ToolCall:
        """The tool call as the imported ``llm.call`` records it."""
        if self.tool is not None:
            name, arguments = self.tool, self.tool_arguments or {}
        else:
            name, arguments = self.name, self.arguments
        return ToolCall(id=self.call_id, name=name, arguments=json.dumps(arguments))


def session_id_of(format_name: str, sha256: str, attempt: int | None = None) -> uuid.UUID:
    part = "" if attempt is None else f":attempt {attempt}"
    return uuid.uuid5(IMPORT_NAMESPACE, f"{format_name}:{sha256}{part}")


class SessionBuilder:
    """Collects one recording's events in order (see the module)."""

    def __init__(
        self,
        format_name: str,
        file: str,
        data: bytes,
        *,
        line: int | None = None,
        attempt: int | None = None,
    ) -> None:
        self.format = format_name
        self.file = file
        self.line = line
        self.attempt = attempt
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.session_id = session_id_of(format_name, self.sha256, attempt)
        self.events: list[Event] = [SessionCreated()]  # its real content comes in ``build``
        self.messages: dict[str, str] = {}
        self.last_state: str | None = None

    def origin(self, index: int | None, *, id: Any = None, field: str = "") -> ImportOrigin:
        return ImportOrigin(
            format=self.format,
            file=self.file,
            line=self.line,
            attempt=self.attempt,
            index=index,
            id=None if id is None else str(id),
            field=field,
        )

    @property
    def next_seq(self) -> int:
        return len(self.events) + 1

    def add(self, event: Event, origin: ImportOrigin) -> int:
        """Append ``event`` (marked with ``origin`` and its import id); its seq."""
        seq = self.next_seq
        self.events.append(
            event.model_copy(update={"imported": origin, "event_id": self._event_id(seq)})
        )
        if isinstance(event, AgentState) and event.source == "agent":
            self.last_state = event.state
        return seq

    def state(
        self,
        state: AgentStateName,
        reason: str,
        origin: ImportOrigin,
        limit: LimitName | None = None,
    ) -> int:
        return self.add(AgentState(state=state, reason=reason, limit=limit), origin)

    def _event_id(self, seq: int) -> uuid.UUID:
        return uuid.uuid5(self.session_id, str(seq))

    def _store(self, value: Any) -> str:
        text = canonical_json(value)
        key = hashlib.sha256(text.encode()).hexdigest()
        self.messages[key] = text
        return key

    def model_call(
        self,
        origin: ImportOrigin,
        *,
        model: str,
        content: str | None,
        uses: list[ToolUse],
        prompt: list[dict[str, Any]] | None = None,
        tools: list[dict[str, Any]] | None = None,
        finish_reason: str | None = None,
        usage: LlmUsage | None = None,
        cost_usd: float | None = None,
        latency_ms: float | None = None,
    ) -> int:
        """The ``llm.call`` of one recorded response; its seq."""
        messages = prompt or []
        hashes = [self._store(message) for message in messages]
        offered = {"tools": tools or []}
        tools_hash = content_hash(offered)
        if tools:
            self._store(offered)
        call = LlmCall(
            model=model,
            params={},
            fingerprint=fingerprint(
                model, [stable_hash(message) for message in messages], tools_hash, {}
            ),
            prompt=hashes,
            tools=tools_hash if tools else None,
            response=LlmResponse(
                content=content,
                tool_calls=[use.tool_call() for use in uses],
                finish_reason=finish_reason or ("tool_calls" if uses else "stop"),
            ),
            usage=usage or LlmUsage(),
            cost_usd=cost_usd,
            latency_ms=latency_ms,
        )
        return self.add(call, origin)

    def price_calls(self, costs: list[float | None]) -> bool:
        """Give the model calls, in order, these costs (a recording that lists one per call
        rather than per response); nothing when the counts differ, as which cost belongs to
        which call is then unknown. Whether they were given."""
        calls = [index for index, event in enumerate(self.events) if event.kind == "llm.call"]
        if len(calls) != len(costs):
            return False
        for index, cost in zip(calls, costs, strict=True):
            self.events[index] = self.events[index].model_copy(update={"cost_usd": cost})
        return True

    def action(
        self, use: ToolUse, *, thought: str, cause: int | None, source: str = "agent"
    ) -> Event:
        """The action recorded for ``use``: what Chronicle's agent makes of its tool call,
        else an ``imported`` action with the name and arguments as recorded."""
        action: Action | None = None
        if use.tool is not None:
            try:
                action = to_action(
                    use.tool_call(), thought=thought, tools=BUILTIN_TOOLS, mcp_tools={}
                )
            except InvalidToolCall:
                action = None
        if action is None:
            action = ImportedAction(
                tool=use.name, arguments=use.arguments, thought=thought, tool_call_id=use.call_id
            )
        return action.model_copy(update={"cause": cause, "source": source})

    def build(self, *, title: str, config: dict[str, Any]) -> ImportedSession:
        """The session, its ``session.created`` holding ``title`` and ``config`` (with what
        every imported session says: the runtime ``imported`` and the file's origin)."""
        created = SessionCreated(
            title=title[:200],
            config={
                "runtime": "imported",
                "workspace": WORKSPACE,
                "max_iterations": max(1, sum(e.kind == "llm.call" for e in self.events)),
                **config,
                "imported": {
                    "format": self.format,
                    "file": self.file,
                    "sha256": self.sha256,
                    **({"line": self.line} if self.line is not None else {}),
                    **({"attempt": self.attempt} if self.attempt is not None else {}),
                    **config.get("imported", {}),
                },
            },
        )
        self.events[0] = created.model_copy(
            update={"imported": self.origin(None, field="file"), "event_id": self._event_id(1)}
        )
        return ImportedSession(
            session_id=self.session_id,
            title=title[:200],
            format=self.format,
            file=self.file,
            events=self.events,
            messages=self.messages,
        )


def refused(builder: SessionBuilder, index: int | None, exc: ValidationError) -> ImportProblem:
    """A value of item ``index`` that an event refused, as an ``ImportProblem``."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or None
    return ImportProblem(
        builder.file,
        error["msg"],
        line=builder.line,
        attempt=builder.attempt,
        index=index,
        field=field,
    )
