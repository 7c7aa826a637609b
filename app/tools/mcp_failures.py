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

from app.tools.config import McpServerConfig

#: The SDK's error code for a connection that ended (``mcp.types.CONNECTION_CLOSED``).
CONNECTION_CLOSED = -32000


def _mcp_error(exc: BaseException) -> tuple[int, str] | None:
    """(code, message) of the SDK's ``MCPError`` (imported only once the SDK is in use)."""
    from mcp import MCPError

    return (exc.code, exc.message) if isinstance(exc, MCPError) else None


def root_cause(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, cancellations skipped."""
    while isinstance(exc, BaseExceptionGroup):
        real = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (real or list(exc.exceptions))[0]
    return exc


def is_connection_closed(exc: BaseException) -> bool:
    """The server went away (its process exited, or it closed the connection)."""
    error = _mcp_error(root_cause(exc))
    return error is not None and error[0] == CONNECTION_CLOSED


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
        error = _mcp_error(cause)
        if error is not None:
            return f"{config.url} answered with an error: {error[1]}"
        if type(cause).__module__.split(".")[0].startswith("httpx"):  # the SDK's HTTP client
            return f"the connection to {config.url} failed: {cause}"
    if isinstance(cause, TimeoutError):
        return "it did not answer in time"
    text = str(cause)
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__
