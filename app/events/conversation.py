"""Conversation and agent-status events."""

from __future__ import annotations

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

    def payload(self) -> dict[str, Any]:
        payload = super().payload()
        for name in _COMMAND_FIELDS:
            if payload.get(name) is None:
                payload.pop(name, None)
        return payload


_COMMAND_FIELDS = ("exit_code", "wall_seconds")


class Condensation(Event):
    """The conversation got too long for the model: turns before ``forget_before`` (a seq)
    are left out of the prompt from now on, except the user's messages."""

    kind: Literal["agent.condensation"] = "agent.condensation"
    source: Source = "agent"
    forget_before: int = Field(ge=1)
    forgotten_calls: int = Field(default=0, ge=0)
    reason: str = ""
