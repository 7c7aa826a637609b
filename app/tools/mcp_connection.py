"""One MCP server of a session, through the official SDK's ``Client``.

The SDK's client must be entered and left in one task, so each server lives in a task of its
own and calls reach it through a queue. When the server goes away (its process exits, its
HTTP endpoint stops answering) every call waiting for it, in flight or queued, fails at
once with the reason, and later calls fail without waiting: a dead server never costs a
call its whole timeout. A stdio server's stderr goes to its log file, whose last line
explains an exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import BaseModel

from app.errors import ChronicleError
from app.tools.config import McpServerConfig
from app.tools.mcp_failures import describe_failure, is_connection_closed

if TYPE_CHECKING:  # the SDK takes a second to import: only sessions with servers pay for it
    from mcp.types import CallToolResult

#: How much of the end of a log file is searched for the server's last line on stderr.
LOG_TAIL_BYTES = 8192


class McpTool(BaseModel):
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]


class McpServerError(ChronicleError):
    """The server is not running (it failed to start or went away); the message says why."""


def _open_log(path: Path) -> tuple[TextIO, int]:
    """The server's stderr log, appended to (0600, in a 0700 directory: a server may print
    secrets); and where this run's part of it starts."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    handle = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
    return handle, handle.seek(0, os.SEEK_END)


def _last_line(path: Path, since: int) -> str | None:
    """The last non-empty line written to ``path`` after offset ``since``."""
    try:
        with path.open("rb") as handle:
            end = handle.seek(0, os.SEEK_END)
            handle.seek(max(since, end - LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:500] if lines else None


class McpConnection:
    """A running (or failed) MCP server: its tools, and calls to them."""

    def __init__(self, config: McpServerConfig, log_path: Path) -> None:
        self.config = config
        self.log_path = log_path
        self.tools: list[McpTool] = []
        #: Why the server is not running; None while it is (or is still starting).
        self.failure: str | None = None
        self._requests: asyncio.Queue[tuple[str, dict[str, Any], asyncio.Future[Any]]] = (
            asyncio.Queue()
        )
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._log: TextIO | None = None
        self._log_start = 0
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the server and list its tools, within its start timeout;
        ``McpServerError`` saying why when it does not come up."""
        if self.config.transport == "stdio":
            try:
                self._log, self._log_start = await asyncio.to_thread(_open_log, self.log_path)
            except OSError as exc:
                self.failure = f"its log file {self.log_path} could not be opened: {exc}"
                raise McpServerError(self.failure) from None
        self._task = asyncio.create_task(self._serve(), name=f"mcp-{self.config.name}")
        try:
            async with asyncio.timeout(self.config.start_timeout):
                await asyncio.shield(self._ready)
        except TimeoutError:
            self.failure = f"it did not start within {self.config.start_timeout:g} s"
            await self.close()
        except McpServerError:
            pass  # self.failure says why
        if self.failure is not None:
            raise McpServerError(self.failure + self._log_hint())

    def _log_hint(self) -> str:
        return f" (its stderr is in {self.log_path})" if self._log is not None else ""

    def _transport(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.sse import sse_client
        from mcp.client.stdio import stdio_client

        config = self.config
        if config.transport == "stdio":
            assert config.command is not None and self._log is not None
            parameters = StdioServerParameters(
                command=config.command, args=config.args, env=config.env
            )
            return stdio_client(parameters, errlog=self._log)
        assert config.url is not None
        if config.transport == "sse":
            return sse_client(config.url)
        return config.url  # the Client speaks streamable HTTP to a URL

    async def _serve(self) -> None:
        from mcp import Client

        in_flight: asyncio.Future[Any] | None = None
        try:
            async with Client(
                self._transport(), read_timeout_seconds=self.config.call_timeout
            ) as client:
                listed = await client.list_tools()
                self.tools = [
                    McpTool(
                        server=self.config.name,
                        name=tool.name,
                        description=tool.description or "",
                        input_schema=tool.input_schema or {},
                    )
                    for tool in listed.tools
                ]
                self._ready.set_result(None)
                while True:
                    name, arguments, answer = await self._requests.get()
                    if answer.done():  # its caller gave up
                        continue
                    in_flight = answer
                    try:
                        result = await client.call_tool(name, arguments)
                    except Exception as exc:
                        if is_connection_closed(exc):
                            raise  # the server is gone: everything waiting fails below
                        if not answer.done():  # one failed call must not end the server
                            answer.set_exception(exc)
                    else:
                        if not answer.done():
                            answer.set_result(result)
                    in_flight = None
        except BaseException as exc:
            if self._closing:
                self.failure = self.failure or "it was closed"
            else:
                last = await asyncio.to_thread(_last_line, self.log_path, self._log_start)
                self.failure = describe_failure(
                    exc, self.config, last_stderr=last if self._log is not None else None
                )
            self._fail_waiting(in_flight)
            if isinstance(exc, asyncio.CancelledError) and self._closing:
                raise

    def _fail_waiting(self, in_flight: asyncio.Future[Any] | None) -> None:
        """Every call waiting for this server fails now, with the reason."""
        error = McpServerError(self.failure or "it stopped")
        waiting = [in_flight]
        while not self._requests.empty():
            waiting.append(self._requests.get_nowait()[2])
        for future in waiting:
            if future is not None and not future.done():
                future.set_exception(error)
        if not self._ready.done():
            self._ready.set_exception(error)
            self._ready.exception()  # retrieved: start() may have stopped waiting for it

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call ``tool``; ``McpServerError`` when the server is not running (at once, or as
        soon as it goes away), ``TimeoutError`` after the call timeout, or the call's error."""
        if self.failure is not None:
            raise McpServerError(self.failure + self._log_hint())
        answer: asyncio.Future[CallToolResult] = asyncio.get_running_loop().create_future()
        await self._requests.put((tool, arguments, answer))
        try:
            async with asyncio.timeout(self.config.call_timeout):
                return await answer
        except McpServerError as exc:
            raise McpServerError(f"{exc}{self._log_hint()}") from None
        finally:
            answer.cancel()  # no-op when answered; tells the server loop to skip it otherwise

    async def close(self) -> None:
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._log is not None:
            await asyncio.to_thread(self._log.close)
