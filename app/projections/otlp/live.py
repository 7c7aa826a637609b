"""The spans an event recorded completes, as the batch export gives them (``spans.py``).

The live exporter reads the log once, in global order, and for each event sends what it
completes:

- an ``llm.call``: its ``chat`` span (with contents: its whole prompt, from the previous
  call's, kept here per session, or read from the log after a restart);
- an observation: the ``execute_tool`` span of the action it answers (read by ``cause``);
- the agent's ``agent.state`` that leaves the working states (finished, awaiting input,
  paused, stopped, error): the session's ``invoke_agent`` span over the log up to that event,
  and the span of every action left unanswered.

The spans are made by the same functions as ``session_spans``, from the same events, so their
ids and attributes are the batch export's. The platform's audit log is not a session: no
spans.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from app.events.platform_audit import PLATFORM_LOG_ID
from app.events.prompts import PromptChainError, whole_prompt, whole_prompts
from app.events.registry import AWAITED_KINDS, OBSERVATION_KINDS
from app.projections.otlp.spans import (
    UNSENT_FIELDS,
    Span,
    chat_span,
    ended_session_spans,
    tool_name,
    tool_names,
    tool_span,
)
from app.projections.session_state import WORKING_STATES
from app.store import EventStore, RecordedEvent

log = logging.getLogger(__name__)

#: Sessions whose last whole prompt is kept (with contents); one not kept is read again.
KEPT_PROMPTS = 1_000


def ends_a_run(event: RecordedEvent) -> bool:
    """Whether the event is the agent leaving its working states (the session's span is
    sent then)."""
    if event.kind != "agent.state" or event.source != "agent":
        return False
    return event.payload.get("state") not in WORKING_STATES


class LiveSpans:
    """Turns each event into the spans it completes (see the module), reading the log for
    what the event itself does not hold."""

    def __init__(self, store: EventStore, *, content: bool) -> None:
        self.store = store
        self.content = content
        #: session -> the whole prompt of its latest call seen (with contents only)
        self._prompts: OrderedDict[UUID, list[str]] = OrderedDict()

    async def of(self, event: RecordedEvent) -> list[Span]:
        if event.session_id == PLATFORM_LOG_ID:
            return []
        if event.kind == "llm.call":
            return [await self._chat(event)]
        if event.kind in OBSERVATION_KINDS and event.cause is not None:
            action = await self._event(event.session_id, event.cause)
            if action is None or action.kind not in AWAITED_KINDS:
                return []
            return [tool_span(action, event, await self._tool(action), content=self.content)]
        if ends_a_run(event):
            events = await self.store.read(
                event.session_id, limit=event.seq, leave_out=UNSENT_FIELDS
            )
            return ended_session_spans(events, content=self.content)
        return []

    async def _event(self, session: UUID, seq: int) -> RecordedEvent | None:
        found = await self.store.read(session, after_seq=seq - 1, limit=1)
        return found[0] if found and found[0].seq == seq else None

    async def _tool(self, action: RecordedEvent) -> str:
        cause = None
        if action.cause is not None:
            cause = await self._event(action.session_id, action.cause)
        call_id = action.payload.get("tool_call_id")
        earlier: dict[str, str] = {}
        if call_id and not (cause is not None and tool_names(cause).get(str(call_id))):
            # rare: the call that asked for it is not its cause; the calls before it say
            earlier_events = await self.store.read(
                action.session_id, limit=action.seq - 1, leave_out=UNSENT_FIELDS
            )
            for event in earlier_events:
                if event.kind == "llm.call":
                    earlier.update(tool_names(event))
        return tool_name(action, cause, earlier)

    async def _chat(self, call: RecordedEvent) -> Span:
        if not self.content:
            return chat_span(call, None, {})
        prompt = await self._whole_prompt(call)
        messages: Mapping[str, Mapping[str, Any]] = {}
        if prompt:
            messages = await self.store.read_messages(sorted(set(prompt)))
        return chat_span(call, prompt if prompt is not None else [], messages)

    async def _whole_prompt(self, call: RecordedEvent) -> list[str] | None:
        session = call.session_id
        previous = self._prompts.pop(session, None)
        try:
            if previous is None and call.payload.get("prompt_kept") is not None:
                earlier = await self.store.read(session, limit=call.seq)
                calls = (e.payload for e in earlier if e.kind == "llm.call")
                prompt = list(whole_prompts(calls))[-1]
            else:
                prompt = whole_prompt(call.payload, previous)
        except PromptChainError as exc:
            log.warning("otlp export: session %s call %d: %s", session, call.seq, exc)
            return None
        self._prompts[session] = prompt
        while len(self._prompts) > KEPT_PROMPTS:
            self._prompts.popitem(last=False)
        return prompt
