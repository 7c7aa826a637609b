"""The agents a session can be run or replayed with, by name.

A replay tries another agent against recordings (``chronicle replay --agent NAME``); the
name is recorded in the replay's ``agent_config``. Every agent is a ``CodeActAgent`` (the
controller drives that interface); a new one is added here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from app.agent.codeact import CodeActAgent
from app.agent.shell_only import ShellOnlyAgent
from app.errors import ChronicleError

AGENTS: Mapping[str, type[CodeActAgent]] = MappingProxyType(
    {agent.name: agent for agent in (CodeActAgent, ShellOnlyAgent)}
)


class UnknownAgent(ChronicleError, LookupError):
    """No agent of that name; the message lists the registered ones."""


def agent_class(name: str) -> type[CodeActAgent]:
    """The agent registered as ``name``; ``UnknownAgent`` names the ones there are."""
    try:
        return AGENTS[name]
    except KeyError:
        raise UnknownAgent(
            f"there is no agent {name!r}; the registered agents are: {', '.join(AGENTS)}"
        ) from None
