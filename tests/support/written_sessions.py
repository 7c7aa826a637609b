"""Sessions written step by step as the controller writes them, without running anything: each
request prepared by a real ``LlmGateway`` (its fingerprint, its prompt stored), each reply
turned into actions by the real ``CodeActAgent``, the observations and states as scripted.
Replay tests and the golden histories are made with it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from app.agent.codeact import CodeActAgent, last_call
from app.events import (
    AgentState,
    Event,
    LlmCall,
    LlmResponse,
    Message,
    RunOutput,
    SessionCreated,
    ToolCall,
    parse_event,
)
from app.llm import LlmConfig, LlmGateway
from app.store import EventStore

WORKSPACE = "/home/user/project"


class Recorder:
    """Writes a session as a live run would have recorded it."""

    def __init__(
        self,
        store: EventStore,
        max_iterations: int = 100,
        stuck_detection: bool = True,
        workspace: str = WORKSPACE,
    ) -> None:
        self.store = store
        self.workspace = workspace
        self.stuck_detection = stuck_detection
        self.session = uuid.uuid4()
        self.max_iterations = max_iterations
        self.llm = LlmConfig(model="openai/fake-model", base_url="http://model.invalid/v1")
        self.gateway = LlmGateway(store, self.llm)
        self.agent = CodeActAgent(self.gateway, workspace)
        self.calls = 0

    async def start(self, task: str = "Fix the tests.") -> None:
        config = {
            "agent": "codeact",
            "workspace": self.workspace,
            "runtime": "local",
            "model": self.llm.model,
            "base_url": self.llm.base_url,
            "llm": self.llm.public(),
            "tools": [tool["function"]["name"] for tool in self.agent.tools()],
            "mcp_servers": [],
            "max_iterations": self.max_iterations,
            "max_cost_usd": None,
            "stuck_detection": self.stuck_detection,
        }
        await self.store.append(
            self.session,
            [SessionCreated(title=task, config=config), Message(content=task)],
            expected_seq=0,
        )

    async def call(self, *tools: tuple[str, dict[str, Any]], content: str = "") -> list[int]:
        """A model call answered with ``tools`` (name, arguments) and what the agent made of
        it; the seqs of what it led to."""
        events = await self.store.read(self.session)
        request = self.gateway.prepare(
            self.agent.messages(events), self.agent.tools(), last_call(events)
        )
        await self.gateway.store_prompt(request)
        self.calls += 1
        tool_calls = [
            ToolCall(id=f"call_{self.calls}_{i}", name=name, arguments=json.dumps(arguments))
            for i, (name, arguments) in enumerate(tools)
        ]
        call = LlmCall(
            model=self.llm.model,
            params={**request.params, "base_url": self.llm.base_url},
            fingerprint=request.fingerprint,
            prompt=request.recorded_prompt(),
            prompt_kept=request.kept,
            tools=request.tools_hash,
            response=LlmResponse(
                content=content,
                tool_calls=tool_calls,
                finish_reason="tool_calls" if tool_calls else "stop",
            ),
        )
        seq = events[-1].seq + 1
        return [
            e.seq
            for e in (await self.append(call, *self.agent.consequences(call.payload(), seq)))[1:]
        ]

    async def append(self, *events: Event) -> list[Any]:
        return await self.store.append(self.session, list(events))

    async def output(self, action: int, output: str, exit_code: int = 0) -> None:
        await self.append(RunOutput(output=output, exit_code=exit_code, cause=action))

    async def append_answer(self, action: int, kind: str, **payload: Any) -> None:
        """The observation of ``kind`` answering the action at seq ``action``."""
        await self.append(parse_event({"kind": kind, "cause": action, **payload}))

    async def state(self, state: Any, reason: str = "") -> None:
        await self.append(AgentState(state=state, reason=reason))
