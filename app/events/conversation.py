"""Conversation and agent-status events."""

from __future__ import annotations

from typing import Literal

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
