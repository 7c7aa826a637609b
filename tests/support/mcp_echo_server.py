"""A tiny MCP server for the tests, over SSE or streamable HTTP:
python -m tests.support.mcp_echo_server (sse|http) PORT"""

from __future__ import annotations

import sys

from mcp.server import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


if __name__ == "__main__":
    transport, port = sys.argv[1], int(sys.argv[2])
    if transport == "sse":
        server.run("sse", host="127.0.0.1", port=port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)
