"""Why an MCP server failed, in one sentence a user can act on.

The SDK runs its transports in task groups, so a server that is not listening surfaces as
"ExceptionGroup: unhandled errors in a TaskGroup" with the real error several levels down,
and a refused connection as "All connection attempts failed" with the errno further down its
chain of causes. This finds the root cause and says it plainly.
"""

from __future__ import annotations

import asyncio
import errno
import socket

from mcp import MCPError
from mcp.types import CONNECTION_CLOSED

from app.tools.config import McpServerConfig


def root_cause(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, cancellations skipped."""
    while isinstance(exc, BaseExceptionGroup):
        real = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (real or list(exc.exceptions))[0]
    return exc


def is_connection_closed(exc: BaseException) -> bool:
    """The server went away (its process exited, or it closed the connection)."""
    cause = root_cause(exc)
    return isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED


def _os_error(exc: BaseException) -> OSError | None:
    """The deepest OSError with an errno in ``exc``'s chain of causes."""
    found: OSError | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            found = current
        current = current.__cause__ or current.__context__
    return found


def _connection_problem(error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return "its host name could not be resolved"
    if error.errno == errno.ECONNREFUSED:
        return "connection refused (is the server running and listening there?)"
    return error.strerror or str(error)


def describe_failure(
    exc: BaseException, config: McpServerConfig, *, last_stderr: str | None = None
) -> str:
    """What went wrong with ``config``'s server, as the end of a sentence ("... failed: X")."""
    cause = root_cause(exc)
    if config.transport == "stdio":
        if isinstance(cause, FileNotFoundError):
            where = "" if "/" in (config.command or "") else " on PATH"
            return f"the command {config.command!r} was not found{where}"
        if isinstance(cause, PermissionError):
            return f"the command {config.command!r} may not be run (permission denied)"
        if is_connection_closed(cause):
            if last_stderr:
                return f"it exited; its last line on stderr: {last_stderr!r}"
            return "it exited without writing anything to stderr"
    else:
        problem = _os_error(cause)
        if problem is not None:
            return f"could not connect to {config.url}: {_connection_problem(problem)}"
        if is_connection_closed(cause):
            return f"the server at {config.url} closed the connection"
        if isinstance(cause, MCPError):
            return f"{config.url} answered with an error: {cause.message}"
        if type(cause).__module__.split(".")[0].startswith("httpx"):  # the SDK's HTTP client
            return f"the connection to {config.url} failed: {cause}"
    if isinstance(cause, TimeoutError):
        return "it did not answer in time"
    text = str(cause)
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__
