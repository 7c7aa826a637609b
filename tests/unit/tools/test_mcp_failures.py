"""Why an MCP server failed, in one sentence, from the errors the SDK raises."""

from __future__ import annotations

import errno
import socket

from mcp import MCPError
from mcp.types import CONNECTION_CLOSED

from app.tools.config import McpServerConfig
from app.tools.mcp_failures import describe_failure, root_cause

HTTP = McpServerConfig(name="web", transport="http", url="http://127.0.0.1:9/mcp")
STDIO = McpServerConfig(name="local", command="my-mcp-server")


def chained(outer: Exception, inner: BaseException) -> Exception:
    outer.__cause__ = inner
    return outer


def test_the_root_cause_is_found_inside_nested_groups() -> None:
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed")
    group = ExceptionGroup("unhandled errors in a TaskGroup", [
        ExceptionGroup("unhandled errors in a TaskGroup", [chained(OSError("All failed"), refused)])
    ])  # fmt: skip
    assert isinstance(root_cause(group), OSError)
    assert describe_failure(group, HTTP) == (
        "could not connect to http://127.0.0.1:9/mcp: connection refused "
        "(is the server running and listening there?)"
    )


def test_an_unknown_host_is_named() -> None:
    unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert describe_failure(chained(RuntimeError("x"), unknown), HTTP) == (
        "could not connect to http://127.0.0.1:9/mcp: its host name could not be resolved"
    )


def test_stdio_failures() -> None:
    closed = ExceptionGroup("g", [MCPError(CONNECTION_CLOSED, "Connection closed")])
    assert describe_failure(FileNotFoundError(2, "No such file"), STDIO) == (
        "the command 'my-mcp-server' was not found on PATH"
    )
    assert describe_failure(PermissionError(13, "denied"), STDIO) == (
        "the command 'my-mcp-server' may not be run (permission denied)"
    )
    assert describe_failure(closed, STDIO, last_stderr="missing TOKEN") == (
        "it exited; its last line on stderr: 'missing TOKEN'"
    )
    assert describe_failure(closed, STDIO) == "it exited without writing anything to stderr"


def test_an_http_error_answer_is_quoted() -> None:
    assert describe_failure(MCPError(-32601, "Not Found"), HTTP) == (
        "http://127.0.0.1:9/mcp answered with an error: Not Found"
    )


def test_the_connection_closed_code_is_the_sdks() -> None:
    """Kept as a constant so the SDK is imported only when a session uses MCP."""
    from app.tools import mcp_failures

    assert mcp_failures.CONNECTION_CLOSED == CONNECTION_CLOSED
