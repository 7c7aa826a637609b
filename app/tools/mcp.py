"""The MCP tool service: a session's MCP servers, and how an ``mcp.call`` action runs.

It is the handler of the session's MCP action worker (``ActionWorker``, which gives it the
same guarantees as the executor: an ``mcp.call`` started before a crash is reported as
interrupted, never called again). A server that fails to start, dies, hangs past its call
timeout or errors gives an ``error`` observation with a clear message, never a hung
session. Servers' stderr goes to ``<log_dir>/mcp-<name>.log``, not the terminal.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.events import Action, ErrorObservation, McpCall, Observation, Service
from app.tools.config import McpServerConfig
from app.tools.mcp_connection import McpConnection, McpServerError, McpTool
from app.tools.mcp_results import to_observation

__all__ = ["McpTool", "McpToolService"]


class McpToolService:
    """Starts the session's MCP servers and answers its ``mcp.call`` actions."""

    service: Service = "mcp"
    name = "mcp"
    title = "MCP tool service"

    def __init__(self, servers: list[McpServerConfig], *, log_dir: Path) -> None:
        self.configs = servers
        self.log_dir = log_dir
        self.servers: dict[str, McpConnection] = {}
        #: One sentence per server that did not start.
        self.problems: list[str] = []

    async def start(self) -> list[McpTool]:
        """Start every server at once (each within its start timeout); the tools of those
        that came up. Why the others did not is in ``problems``."""
        for config in self.configs:
            log_path = self.log_dir / f"mcp-{config.name}.log"
            self.servers[config.name] = McpConnection(config, log_path)
        results = await asyncio.gather(
            *(server.start() for server in self.servers.values()), return_exceptions=True
        )
        for name, result in zip(self.servers, results, strict=True):
            if isinstance(result, McpServerError):
                self.problems.append(f"MCP server {name!r} failed to start: {result}")
            elif isinstance(result, BaseException):
                raise result
        return [tool for server in self.servers.values() for tool in server.tools]

    async def handle(self, action: Action) -> Observation:
        if not isinstance(action, McpCall):
            return ErrorObservation(
                message=f"the MCP tool service cannot run {action.kind!r}", error_type="mcp"
            )
        server = self.servers.get(action.server)
        if server is None:
            return ErrorObservation(
                message=f"there is no MCP server {action.server!r}", error_type="mcp"
            )
        tool = f"{action.server}.{action.tool}"
        try:
            result = await server.call(action.tool, action.arguments)
        except TimeoutError:
            return ErrorObservation(
                message=f"the MCP tool {tool} gave no answer within "
                f"{server.config.call_timeout:g} s",
                error_type="mcp",
            )
        except McpServerError as exc:
            return ErrorObservation(
                message=f"the MCP tool {tool} cannot run: the server {action.server!r} is not "
                f"running ({exc})",
                error_type="mcp",
            )
        except Exception as exc:
            return ErrorObservation(message=f"the MCP tool {tool} failed: {exc}", error_type="mcp")
        return to_observation(result)

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers.values()))
