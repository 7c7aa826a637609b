"""A small MCP server for the tests, over stdio, SSE or streamable HTTP:
python tests/support/mcp_echo_server.py stdio [MARKER] | (sse|http) PORT

(``stdio_config`` makes the configuration of a stdio one; ``MARKER`` is an argument that
only this server's command line has, so a test can find and kill its process.)

Besides ``echo`` it has tools that exercise the client: an image, a structured result, a long
text, a line on stderr, a call with a side effect that takes a while, and one that kills the
server. It says on stderr that it started, so a test can find that line in the session's log.
"""

from __future__ import annotations

import os
import struct
import sys
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from mcp.server import MCPServer
from mcp.server.mcpserver import Image

if TYPE_CHECKING:  # run as a script the server needs nothing of the project
    from app.tools.config import McpServerConfig

server = MCPServer("echo")

#: The stderr line the server prints when it starts.
STARTED = "echo server: started"


def tiny_png() -> bytes:
    """A valid 1x1 red PNG, built here so the test needs no image file."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


class Weather(TypedDict):
    city: str
    celsius: float


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def picture() -> Image:
    """A 1x1 PNG image."""
    return Image(data=tiny_png(), format="png")


@server.tool()
def weather(city: str) -> Weather:
    """Structured weather for a city."""
    return {"city": city, "celsius": 21.5}


@server.tool(structured_output=False)
def long_text(size: int) -> str:
    """``size`` characters: a head of 'a's, a middle of 'b's and a tail of 'c's."""
    third = size // 3
    return "a" * third + "b" * (size - 2 * third) + "c" * third


@server.tool()
def complain(text: str) -> str:
    """Write ``text`` to stderr."""
    print(text, file=sys.stderr, flush=True)
    return "complained"


@server.tool()
def record(path: str, text: str, seconds: float = 0.0) -> str:
    """Append a line to ``path`` (a side effect a test can count), then take ``seconds``."""
    with Path(path).open("a") as handle:
        handle.write(text + "\n")
    time.sleep(seconds)
    return f"recorded {text}"


@server.tool()
def die(code: int = 3) -> str:
    """End the server at once with exit code ``code``, saying why on stderr."""
    print("echo server: dying on purpose", file=sys.stderr, flush=True)
    os._exit(code)


def stdio_config(name: str = "echo", marker: str = "", **extra: Any) -> McpServerConfig:
    """This server as a stdio MCP server of a session (run by path, from any directory)."""
    from app.tools.config import McpServerConfig

    arguments = [__file__, "stdio", *([marker] if marker else [])]
    return McpServerConfig(name=name, command=sys.executable, args=arguments, **extra)


if __name__ == "__main__":
    print(STARTED, file=sys.stderr, flush=True)
    transport = sys.argv[1]
    if transport == "stdio":
        server.run("stdio")
    elif transport == "sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
