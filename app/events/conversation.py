"""Conversation and agent-status events."""

from __future__ import annotations

from typing import Literal

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


class Condensation(Event):
    """The conversation got too long for the model: turns before ``forget_before`` (a seq)
    are left out of the prompt from now on, except the user's messages."""

    kind: Literal["agent.condensation"] = "agent.condensation"
    source: Source = "agent"
    forget_before: int = Field(ge=1)
    forgotten_calls: int = Field(default=0, ge=0)
    reason: str = ""
