"""The MCP tool service over SSE and streamable HTTP, against a real server process."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from app.events import McpCall, McpResult
from app.store import EventStore
from app.tools.config import McpServerConfig
from app.tools.mcp import McpToolService

PATHS = {"sse": "/sse", "http": "/mcp"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=["sse", "http"])
def served(request: pytest.FixtureRequest) -> Iterator[McpServerConfig]:
    transport = request.param
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_echo_server", transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):  # until it listens
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, "the MCP test server exited"
            time.sleep(0.05)
        yield McpServerConfig(
            name="echo", transport=transport, url=f"http://127.0.0.1:{port}{PATHS[transport]}"
        )
    finally:
        process.terminate()
        process.wait(10)


async def test_tools_listed_and_called(store: EventStore, served: McpServerConfig) -> None:
    service = McpToolService(store, uuid.uuid4(), [served])
    try:
        async with asyncio.timeout(30):
            tools = await service.start()
        assert service.problems == []
        assert [tool.name for tool in tools] == ["echo"]
        assert service.index() == {"echo__echo": ("echo", "echo")}
        result = await service.execute(
            McpCall(server="echo", tool="echo", arguments={"text": "hi"})
        )
        assert isinstance(result, McpResult) and not result.is_error
        assert result.content[0]["text"] == "echo: hi"
    finally:
        await service.close()
