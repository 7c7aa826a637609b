"""Conversation and agent-status events."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from app.events.base import Event, Source

AgentStateName = Literal[
    "loading",
    "running",
    "awaiting_user_input",
    "paused",
    "stopped",
    "finished",
    "error",
    "rate_limited",
]


#: Which limit ended a run: ``agent.state``'s ``limit``.
LimitName = Literal["iterations", "cost"]

#: How a stop at a limit was worded before ``agent.state`` said which limit it was (migration
#: 0020): an event without ``limit`` is read by its reason's words, as it always was.
_LIMIT_WORDS = re.compile(r"^reached the (iteration|cost) limit\b")


def limit_reached(limit: object, reason: object) -> LimitName | None:
    """The limit an ``agent.state`` payload's ``limit`` (None when absent) or, for an event
    recorded without one, its ``reason`` says the run stopped at."""
    if limit in ("iterations", "cost"):
        return limit  # type: ignore[return-value]
    if limit is None and isinstance(reason, str):
        found = _LIMIT_WORDS.match(reason)
        if found:
            return "iterations" if found.group(1) == "iteration" else "cost"
    return None


class Message(Event):
    """A chat message; from the user by default, from the agent when it talks back."""

    kind: Literal["message"] = "message"
    source: Source = "user"
    content: str


class AgentState(Event):
    """The controller's state changed; ``reason`` says why in words a user understands."""

    kind: Literal["agent.state"] = "agent.state"
    source: Source = "agent"
    state: AgentStateName
    reason: str = ""
    #: Only where Chronicle ran an agent's command without being its agent (``chronicle
    #: record``): the command's exit code (a shell's: 128 + N when signal N ended it) and wall
    #: time, on the state that ends its run. Left out of the payload when None.
    exit_code: int | None = None
    wall_seconds: float | None = Field(default=None, ge=0)
    #: On the ``stopped`` state a limit caused: which one (analytics read it, not the reason's
    #: words). Left out of the payload when None.
    limit: LimitName | None = None
    #: On the ``error`` state stuck detection caused: true (analytics and evaluation reports
    #: read it, not the reason's words). Left out of the payload when None.
    stuck: bool | None = None

    def payload(self) -> dict[str, Any]:
        payload = super().payload()
        for name in _OPTIONAL_FIELDS:
            if payload.get(name) is None:
                payload.pop(name, None)
        return payload


_OPTIONAL_FIELDS = ("exit_code", "wall_seconds", "limit", "stuck")


class Condensation(Event):
    """The conversation got too long for the model: turns before ``forget_before`` (a seq)
    are left out of the prompt from now on, except the user's messages."""

    kind: Literal["agent.condensation"] = "agent.condensation"
    source: Source = "agent"
    forget_before: int = Field(ge=1)
    forgotten_calls: int = Field(default=0, ge=0)
    reason: str = ""


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (
    Message,
    AgentState,
    Condensation,
)
