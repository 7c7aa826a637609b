"""The CodeAct agent: the log becomes a conversation, the model's tool calls become actions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol
from uuid import UUID

from app.agent.calls import consequences
from app.agent.history import Conversation
from app.agent.prompts import system_prompt
from app.agent.tools import BUILTIN_TOOLS
from app.events import Event
from app.llm import LlmReply
from app.llm.retry import Failure
from app.store import RecordedEvent


class ModelGateway(Protocol):
    """What the agent asks the model through: ``LlmGateway`` live, the replay gateway
    (``app.replay``) when a recording answers instead."""

    async def complete(
        self,
        session_id: UUID,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        cause: int | None = None,
        on_retry: Callable[[Failure, float], Awaitable[None]] | None = None,
        record: bool = True,
        previous: Mapping[str, Any] | None = None,
    ) -> LlmReply: ...


def last_call(events: Sequence[RecordedEvent]) -> Mapping[str, Any] | None:
    """The payload of the log's last llm.call: the gateway records a prompt as what it adds
    to that call's (``prompt_kept``)."""
    for event in reversed(events):
        if event.kind == "llm.call":
            return event.payload
    return None


class CodeActAgent:
    name = "codeact"
    #: the built-in tools this agent offers at most (None: every one)
    offers: ClassVar[Sequence[str] | None] = None

    @classmethod
    def builtin_tool_names(cls, wanted: Sequence[str] | None = None) -> list[str]:
        """The built-in tools this agent offers, narrowed to ``wanted`` (None: no narrowing),
        by the name the model sees: what a session records before its agent exists."""
        names = [tool["function"]["name"] for tool in BUILTIN_TOOLS]
        return [
            name
            for name in names
            if (cls.offers is None or name in cls.offers) and (wanted is None or name in wanted)
        ]

    def __init__(
        self,
        gateway: ModelGateway,
        workspace: str,
        *,
        mcp_tools: list[dict[str, Any]] | None = None,
        mcp_index: dict[str, tuple[str, str]] | None = None,
        system_prompt: str | None = None,
        builtin_tools: Sequence[str] | None = None,
    ) -> None:
        """``system_prompt`` replaces the agent's own (``{workspace}`` is filled in);
        ``builtin_tools`` names the built-in tools offered (None: all) — both for trying an
        agent change against recordings."""
        self.gateway = gateway
        self.workspace = workspace
        self.mcp_tools = mcp_tools or []
        self.mcp_index = mcp_index or {}
        self.system_prompt = system_prompt
        offered = self.builtin_tool_names(builtin_tools)
        self.builtin_tools = [tool for tool in BUILTIN_TOOLS if tool["function"]["name"] in offered]
        self._conversation = Conversation(self._system())

    def tools(self) -> list[dict[str, Any]]:
        return [*self.builtin_tools, *self.mcp_tools]

    def messages(self, events: Sequence[RecordedEvent]) -> list[dict[str, Any]]:
        """The conversation for the model, given the log from some event on: every event
        after those given before (``history.Conversation``); the agent keeps what it needs."""
        return self._conversation.messages(events)

    def _system(self) -> str:
        if self.system_prompt is None:
            return system_prompt(self.workspace)
        return self.system_prompt.replace("{workspace}", self.workspace)

    async def step(
        self,
        session_id: UUID,
        events: Sequence[RecordedEvent],
        on_retry: Callable[[Failure, float], Awaitable[None]] | None = None,
    ) -> LlmReply:
        """Ask the model what to do next. ``events`` is the log from some event on, with
        every event after those of the previous step (the controller keeps a window of recent
        events, not the log). The llm.call comes back unrecorded: the controller appends it
        together with the actions it leads to (one write per step)."""
        cause = events[-1].seq if events else None
        messages = self.messages(events)
        return await self.gateway.complete(
            session_id,
            messages,
            self.tools(),
            cause=cause,
            on_retry=on_retry,
            record=False,
            previous=self._conversation.last_call,
        )

    def decide(self, llm_call: RecordedEvent) -> list[Event]:
        """The events a recorded model call leads to (deterministic, so resumable)."""
        return self.consequences(llm_call.payload, llm_call.seq)

    def consequences(self, call: Mapping[str, Any], call_seq: int) -> list[Event]:
        """What a model call (its ``llm.call`` payload) leads to (see ``calls.consequences``)."""
        return consequences(call, call_seq, tools=self.tools(), mcp_tools=self.mcp_index)
