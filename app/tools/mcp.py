"""Per-session MCP servers through the official SDK: list their tools, answer mcp.call actions.

Each server lives in a task of its own (the SDK's client must be entered and left in one
task); calls reach it through a queue. A server that fails to start, hangs past its timeout
or errors gives an ``error`` observation with a clear message, never a hung session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from app.agent.tools import mcp_tool_name, mcp_tool_schema
from app.events import Action, ErrorObservation, McpCall, McpResult, Observation
from app.store import DuplicateEventError, EventStore, RecordedEvent
from app.tools.config import McpServerConfig

log = logging.getLogger(__name__)


class McpTool(BaseModel):
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]

    def schema_for_model(self) -> dict[str, Any]:
        return mcp_tool_schema(self.server, self.name, self.description, self.input_schema)


def _transport(config: McpServerConfig) -> Any:
    from mcp.client.stdio import StdioServerParameters

    if config.transport == "stdio":
        assert config.command is not None
        from mcp.client.stdio import get_default_environment

        return StdioServerParameters(
            command=config.command,
            args=config.args,
            env={**get_default_environment(), **config.env},
        )
    if config.transport == "sse":
        from mcp.client.sse import sse_client

        assert config.url is not None
        return sse_client(config.url)
    return config.url


class _Server:
    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.tools: list[McpTool] = []
        self.failure: str | None = None
        self.requests: asyncio.Queue[tuple[str, dict[str, Any], asyncio.Future[Any]]] = (
            asyncio.Queue()
        )
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._serve(), name=f"mcp-{config.name}")

    async def _serve(self) -> None:
        from mcp import Client

        try:
            async with Client(
                _transport(self.config), read_timeout_seconds=self.config.call_timeout
            ) as client:
                listed = await client.list_tools()
                self.tools = [
                    McpTool(
                        server=self.config.name,
                        name=t.name,
                        description=t.description or "",
                        input_schema=t.input_schema or {},
                    )
                    for t in listed.tools
                ]
                self.ready.set_result(None)
                while True:
                    name, arguments, answer = await self.requests.get()
                    try:
                        answer.set_result(await client.call_tool(name, arguments))
                    except Exception as exc:  # one failed call must not end the server
                        if not answer.done():
                            answer.set_exception(exc)
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            if not self.ready.done():
                self.ready.set_exception(exc)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if self.failure:
            raise RuntimeError(
                f"the MCP server {self.config.name!r} is not running ({self.failure})"
            )
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.requests.put((name, arguments, answer))
        async with asyncio.timeout(self.config.call_timeout):
            return await answer

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


class McpToolService:
    def __init__(self, store: EventStore, session_id: UUID, servers: list[McpServerConfig]) -> None:
        self.store = store
        self.session_id = session_id
        self.configs = servers
        self.servers: dict[str, _Server] = {}
        self.problems: list[str] = []

    async def start(self) -> list[McpTool]:
        """Start every server (each within its start timeout); the tools of those that came up."""
        for config in self.configs:
            server = _Server(config)
            self.servers[config.name] = server
            try:
                async with asyncio.timeout(config.start_timeout):
                    await asyncio.shield(server.ready)
            except TimeoutError:
                server.failure = f"did not start within {config.start_timeout:g} s"
                await server.close()
            except Exception as exc:
                server.failure = f"{type(exc).__name__}: {exc}"
            if server.failure:
                self.problems.append(
                    f"MCP server {config.name!r} failed to start: {server.failure}"
                )
        return [tool for server in self.servers.values() for tool in server.tools]

    def index(self) -> dict[str, tuple[str, str]]:
        """Model-facing tool names -> (server, tool)."""
        return {
            mcp_tool_name(server, tool.name): (server, tool.name)
            for server, running in self.servers.items()
            for tool in running.tools
        }

    async def execute(self, call: McpCall) -> Observation:
        server = self.servers.get(call.server)
        if server is None:
            return ErrorObservation(
                message=f"there is no MCP server {call.server!r}", error_type="mcp"
            )
        try:
            result = await server.call(call.tool, call.arguments)
        except TimeoutError:
            return ErrorObservation(
                message=f"the MCP tool {call.server}.{call.tool} gave no answer within "
                f"{server.config.call_timeout:g} s",
                error_type="mcp",
            )
        except Exception as exc:
            return ErrorObservation(
                message=f"the MCP tool {call.server}.{call.tool} failed: {exc}", error_type="mcp"
            )
        content = [block.model_dump(mode="json", exclude_none=True) for block in result.content]
        return McpResult(content=content, is_error=bool(result.is_error))

    async def run(self) -> None:
        """Answer the session's mcp.call actions (also unanswered earlier ones) until cancelled."""
        events = await self.store.read(self.session_id)
        answered = {e.cause for e in events if e.source == "environment" and e.cause}
        for event in events:
            if event.kind == "mcp.call" and event.seq not in answered:
                await self._handle(event)
        async with self.store.subscribe(
            self.session_id, after_seq=events[-1].seq if events else 0
        ) as stream:
            async for event in stream:
                if event.kind == "mcp.call":
                    await self._handle(event)

    async def _handle(self, event: RecordedEvent) -> None:
        action: Action = event.event()  # type: ignore[assignment]
        assert isinstance(action, McpCall)
        observation = await self.execute(action)
        with contextlib.suppress(DuplicateEventError):
            await self.store.append(
                self.session_id, [observation.model_copy(update={"cause": event.seq})]
            )

    async def close(self) -> None:
        for server in self.servers.values():
            await server.close()
