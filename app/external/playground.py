"""One model call sent again with the user's edit: the playground.

``POST /api/sessions/{id}/model-calls/{seq}/playground`` takes a recorded call's exact request
(its whole prompt, the tools offered, its parameters and model), as the user edited it, and
``run_edited_call`` sends it to the chosen model through the model gateway's own path
(``ExternalCalls.call_model``: the retry policy, the user's gateway limits, usage and cost
recorded as any call's). The call is recorded in a small session of its own, opened the way
the gateway opens a session for an agent we do not run (its owner, then a ``session.created``
of ``agent`` ``external``, client ``playground``): no agent runs in it, no sandbox starts, and
like the gateway's sessions it never counts against the owner's cap of working sessions.

The session's ``session.created`` names the call it came from and the user's edit in words
(``config.from_call``, a ``CallLink``: session, seq, changes); its ``llm.call`` follows, answered
or failed (a model's error is recorded as the gateway records it, and returned, not raised).
The model is chosen as ``POST /api/sessions`` takes one: any model litellm has a provider for,
called with the server's model settings (base URL, key, timeout, retries).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from app.errors import ChronicleError
from app.events.canonical import canonical_json
from app.events.session_config import CallLink
from app.external.calls import ChatRequest, ExternalCalls, one_answer
from app.external.errors import GatewayError
from app.external.sessions import external_session
from app.llm.errors import model_name_problem
from app.sessions.sql.session_owners import record_owner
from app.sessions.sql.users import Principal
from app.store import EventStore, RecordedEvent

#: The User-Agent a playground session records (its ``config.client``: ``Chronicle-Playground``).
PLAYGROUND_CLIENT = "Chronicle-Playground"
#: Recorded parameters that are the gateway's, not the request's: left out of the editable ones.
GATEWAY_PARAMS = frozenset({"base_url", "stream", "stream_options"})
#: Keys a parameter may not have: the request's own parts, and streaming (a playground call is
#: answered whole).
NOT_PARAMS = frozenset({"model", "messages", "tools", "stream", "stream_options"})
#: How much of a value a change's description quotes.
QUOTED = 60


class PlaygroundRefused(ChronicleError, ValueError):
    """The edited request cannot be sent (nothing was recorded): its message says why."""


@dataclass(frozen=True)
class CallRequest:
    """A model call's request: the model, the whole prompt, the tools offered, the parameters."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PlaygroundRun:
    """A playground run, recorded: its session, the ``llm.call`` event, the user's edit in
    words, and the gateway's error when the model failed (the call is recorded either way)."""

    session_id: UUID
    call: RecordedEvent
    changes: list[str]
    error: str | None = None


def editable_params(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded call's parameters as a request gives them: without the gateway's own
    (``base_url``, ``stream``), those it put in ``extra_body`` back beside the rest."""
    params = {key: value for key, value in recorded.items() if key not in GATEWAY_PARAMS}
    extra = params.pop("extra_body", None)
    if isinstance(extra, dict):
        params.update({key: value for key, value in extra.items() if key not in params})
    elif extra is not None:
        params["extra_body"] = extra
    return params


def quoted(value: Any) -> str:
    """A parameter's value in a change's description: its JSON, cut."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"


def _role(message: Mapping[str, Any]) -> str:
    return str(message.get("role", "?"))


def message_changes(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> list[str]:
    """How the prompt changed, message by message (numbered as in the edited prompt, a
    removed one as in the recorded prompt): added, removed, its role or text edited."""
    found: list[str] = []
    matcher = difflib.SequenceMatcher(
        a=[canonical_json(dict(m)) for m in before],
        b=[canonical_json(dict(m)) for m in after],
        autojunk=False,
    )
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        paired = min(a1 - a0, b1 - b0) if op == "replace" else 0
        for offset in range(paired):
            old, new = before[a0 + offset], after[b0 + offset]
            index = b0 + offset
            if _role(old) != _role(new):
                found.append(f"message {index}: role {_role(old)} → {_role(new)}")
            if old.get("content") != new.get("content"):
                found.append(f"message {index} ({_role(new)}) edited")
            others = sorted(
                key for key in {*old, *new} - {"role", "content"} if old.get(key) != new.get(key)
            )
            if others:
                found.append(f"message {index} ({_role(new)}): {', '.join(others)} changed")
        for index in range(a0 + paired, a1):
            found.append(f"message {index} ({_role(before[index])}) removed")
        for index in range(b0 + paired, b1):
            found.append(f"message {index} ({_role(after[index])}) added")
    return found


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return str(name) if name else "?"


def tool_changes(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> list[str]:
    """How the tools offered changed, by name: added, removed, changed."""
    if list(before) == list(after):
        return []
    old = {_tool_name(tool): tool for tool in before}
    new = {_tool_name(tool): tool for tool in after}
    added = [name for name in new if name not in old]
    removed = [name for name in old if name not in new]
    changed = [name for name in new if name in old and new[name] != old[name]]
    found = [f"tool {name} added" for name in added]
    found += [f"tool {name} removed" for name in removed]
    found += [f"tool {name} changed" for name in changed]
    return found or ["tools reordered"]


def param_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """How the parameters changed: each one added, removed or given another value."""
    found: list[str] = []
    for key in [*after, *(key for key in before if key not in after)]:
        if key not in before:
            found.append(f"{key}: {quoted(after[key])} (added)")
        elif key not in after:
            found.append(f"{key} removed (was {quoted(before[key])})")
        elif before[key] != after[key]:
            found.append(f"{key}: {quoted(before[key])} → {quoted(after[key])}")
    return found


def edit_changes(original: CallRequest, edited: CallRequest) -> list[str]:
    """The user's edit in words, one line per change (empty: sent again as recorded)."""
    found = []
    if edited.model != original.model:
        found.append(f"model: {original.model} → {edited.model}")
    found += message_changes(original.messages, edited.messages)
    found += tool_changes(original.tools, edited.tools)
    found += param_changes(original.params, edited.params)
    return found


def checked_params(params: Mapping[str, Any]) -> None:
    """``PlaygroundRefused`` for parameters the playground cannot send."""
    wrong = sorted(key for key in params if key in NOT_PARAMS)
    if wrong:
        raise PlaygroundRefused(
            f"the parameters may not set {', '.join(wrong)}: the model, messages and tools "
            "have fields of their own, and a playground call is answered whole (not streamed)"
        )
    try:
        one_answer(dict(params))
    except GatewayError as exc:
        raise PlaygroundRefused(exc.message) from None


async def run_edited_call(
    store: EventStore,
    calls: ExternalCalls,
    principal: Principal,
    source: UUID,
    seq: int,
    original: CallRequest,
    edited: CallRequest,
) -> PlaygroundRun:
    """Record a playground session for ``principal`` and send ``edited`` in it (see the
    module's docstring); ``PlaygroundRefused`` (nothing recorded) for a request that cannot
    be sent: a model no provider answers to, parameters it may not have."""
    checked_params(edited.params)
    if not edited.model.strip():
        raise PlaygroundRefused("name a model to send the call to")
    problem = await asyncio.to_thread(model_name_problem, edited.model)
    if problem is not None:
        raise PlaygroundRefused(problem)
    gateway = calls.gateway(edited.model)
    changes = edit_changes(original, edited)
    session_id = uuid.uuid4()
    link = CallLink(session=str(source), seq=seq, changes=changes)
    created = external_session(
        title=f"Playground: call #{seq} of {str(source)[:8]}",
        user=principal.name,
        user_agent=PLAYGROUND_CLIENT,
        extra={"from_call": link.stored()},
    )
    await record_owner(store, session_id, principal.user_id)
    await store.append(session_id, [created], expected_seq=0)
    request = ChatRequest(
        model=edited.model,
        messages=edited.messages,
        tools=edited.tools,
        params=dict(edited.params),
    )
    error = None
    try:
        await calls.call_model(session_id, gateway, request)
    except GatewayError as exc:  # recorded as a failed (or refused) llm.call
        error = exc.message
    recorded = await store.read(session_id, after_seq=1)
    answered = [event for event in recorded if event.kind == "llm.call"]
    if not answered:
        raise RuntimeError(f"the playground call of session {session_id} was not recorded")
    return PlaygroundRun(session_id=session_id, call=answered[0], changes=changes, error=error)
