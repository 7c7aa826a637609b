"""The MCP tool service over SSE and streamable HTTP against a real server process, and the
one sentence a server that cannot start gets."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NamedTuple

import pytest

from app.events import McpCall, McpResult
from app.store import ActionWorker, EventStore
from app.tools.config import McpServerConfig
from app.tools.mcp import McpToolService
from tests.support.waiting import until, wait_for_events

PATHS = {"sse": "/sse", "http": "/mcp"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served(NamedTuple):
    config: McpServerConfig
    process: subprocess.Popen[bytes]


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(params=["sse", "http"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[Served]:
    transport = request.param
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_echo_server", transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await until(
            lambda: listening(port),
            timeout=10,
            what="the MCP test server listening",
            process=process,
        )
        url = f"http://127.0.0.1:{port}{PATHS[transport]}"
        yield Served(McpServerConfig(name="echo", transport=transport, url=url), process)
    finally:
        process.terminate()
        process.wait(10)


async def test_tools_listed_and_called(served: Served, tmp_path: Path) -> None:
    service = McpToolService([served.config], log_dir=tmp_path)
    try:
        async with asyncio.timeout(30):
            tools = await service.start()
        assert service.problems == []
        assert [tool.name for tool in tools][:3] == ["echo", "picture", "weather"]
        result = await service.handle(McpCall(server="echo", tool="echo", arguments={"text": "hi"}))
        assert isinstance(result, McpResult) and not result.is_error
        assert result.content[0]["text"] == "echo: hi"
    finally:
        await service.close()


@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_a_server_not_listening_is_one_sentence(transport: str, tmp_path: Path) -> None:
    """Before: "MCP server 'web' failed to start: ExceptionGroup: unhandled errors in a
    TaskGroup (1 sub-exception)" (streamable HTTP), "ConnectError: All connection attempts
    failed" (SSE)."""
    url = f"http://127.0.0.1:{free_port()}{PATHS[transport]}"
    service = McpToolService(
        [McpServerConfig(name="web", transport=transport, url=url)], log_dir=tmp_path
    )
    try:
        async with asyncio.timeout(30):
            assert await service.start() == []
    finally:
        await service.close()
    assert service.problems == [
        f"MCP server 'web' failed to start: could not connect to {url}: connection refused "
        "(is the server running and listening there?)"
    ]


async def test_a_server_that_dies_fails_every_pending_call_at_once(
    served: Served, store: EventStore, tmp_path: Path
) -> None:
    """Before: the call in flight waited its whole call timeout (60 s) and the others said
    "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)"."""
    config = served.config.model_copy(update={"call_timeout": 60.0})
    service = McpToolService([config], log_dir=tmp_path)
    session = uuid.uuid4()
    effects = tmp_path / "effects.txt"
    slow = McpCall(
        server="echo", tool="record", arguments={"path": str(effects), "text": "x", "seconds": 50}
    )
    calls = [slow, *(McpCall(server="echo", tool="echo", arguments={"text": t}) for t in "ab")]
    async with asyncio.timeout(30):
        await service.start()
    worker = asyncio.create_task(ActionWorker(store, session, service).run())
    try:
        await store.append(session, calls)
        await until(effects.exists, timeout=30, what="the slow tool started")
        served.process.kill()
        served.process.wait(10)
        killed = time.monotonic()
        found = await wait_for_events(store, session, 3, lambda e: e.cause is not None)
        took = time.monotonic() - killed
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
        await service.close()
    assert took < 5, f"the errors took {took:.1f} s"
    assert [(e.kind, e.cause) for e in found] == [("error", 1), ("error", 2), ("error", 3)]
    for error in found:
        message = error.payload["message"]
        assert "the server 'echo' is not running (" in message and config.url in message
        assert "ExceptionGroup" not in message
