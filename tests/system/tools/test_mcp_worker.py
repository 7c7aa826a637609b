"""The MCP tool service as an action worker, against a real stdio MCP server process:
calls are never re-run after a crash, a server that dies fails every waiting call at once,
its stderr goes to the session's log file, failures to start say why in one sentence, and
results keep structured content and are cut like command output."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.events import McpCall, McpResult
from app.store import ActionWorker, EventStore, RecordedEvent
from app.tools.config import McpServerConfig
from app.tools.mcp import McpToolService
from tests.support.mcp_echo_server import STARTED, stdio_config
from tests.support.processes import kill_with_argument
from tests.support.waiting import until, wait_for_events


@contextlib.asynccontextmanager
async def serving(
    store: EventStore, session: uuid.UUID, service: McpToolService
) -> AsyncIterator[asyncio.Task[None]]:
    """The service started and its action worker running, until the block ends (a crash:
    the worker is cancelled mid-call and the servers stop, as when the process dies)."""
    async with asyncio.timeout(60):
        await service.start()
    assert service.problems == []
    task = asyncio.create_task(ActionWorker(store, session, service).run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await service.close()


async def answers(store: EventStore, session: uuid.UUID, count: int) -> list[RecordedEvent]:
    """The session's first ``count`` answers (events from the environment)."""
    return await wait_for_events(store, session, count, lambda e: e.source == "environment")


async def test_a_call_interrupted_by_a_crash_is_reported_never_run_again(
    store: EventStore, tmp_path: Path
) -> None:
    """Before the action worker the MCP service re-ran every unanswered mcp.call on start:
    here the tool's side effect happened twice."""
    session = uuid.uuid4()
    effects = tmp_path / "effects.txt"
    call = McpCall(
        server="echo",
        tool="record",
        arguments={"path": str(effects), "text": "ran", "seconds": 30},
    )
    async with serving(store, session, McpToolService([stdio_config()], log_dir=tmp_path)):
        await store.append(session, [call])
        await until(  # the server process writes it and says nothing
            lambda: effects.exists() and effects.read_text() == "ran\n",
            timeout=30,
            what="the tool's side effect",
        )
    # the process "crashed" while the tool ran; a new one starts
    async with serving(store, session, McpToolService([stdio_config()], log_dir=tmp_path)):
        [answer] = await answers(store, session, 1)
        await store.append(
            session, [McpCall(server="echo", tool="echo", arguments={"text": "next"})]
        )
        later = await answers(store, session, 2)
    assert answer.kind == "error" and answer.cause == 1
    assert "interrupted" in answer.payload["message"]
    assert "may have partly run" in answer.payload["message"]
    assert effects.read_text() == "ran\n"  # once
    assert later[1].kind == "mcp.result" and later[1].payload["content"][0]["text"] == "echo: next"


async def test_a_server_that_dies_fails_every_pending_call_at_once(
    store: EventStore, tmp_path: Path
) -> None:
    """Before: the first call failed, and each later one waited for its whole call timeout
    (60 s here, three calls: three minutes) before its error."""
    session = uuid.uuid4()
    marker = f"chronicle-test-{uuid.uuid4()}"
    effects = tmp_path / "effects.txt"
    service = McpToolService([stdio_config(marker=marker, call_timeout=60)], log_dir=tmp_path)
    slow = McpCall(
        server="echo", tool="record", arguments={"path": str(effects), "text": "x", "seconds": 50}
    )
    calls = [slow, *(McpCall(server="echo", tool="echo", arguments={"text": t}) for t in "ab")]
    async with serving(store, session, service):
        await store.append(session, calls)
        await until(effects.exists, timeout=30, what="the slow tool started")
        kill_with_argument(marker)
        killed = time.monotonic()
        found = await answers(store, session, 3)
        took = time.monotonic() - killed
    assert took < 5, f"the errors took {took:.1f} s"
    assert [(e.kind, e.cause) for e in found] == [("error", 1), ("error", 2), ("error", 3)]
    for error in found:
        message = error.payload["message"]
        assert "the server 'echo' is not running (it exited" in message, message
        assert STARTED in message  # its last line on stderr
        assert str(tmp_path / "mcp-echo.log") in message


async def test_server_stderr_goes_to_the_sessions_log_file(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "logs" / "session"
    service = McpToolService([stdio_config()], log_dir=log_dir)
    try:
        async with asyncio.timeout(60):
            await service.start()
        result = await service.handle(
            McpCall(server="echo", tool="complain", arguments={"text": "a warning for the log"})
        )
        assert isinstance(result, McpResult)
    finally:
        await service.close()
    log = (log_dir / "mcp-echo.log").read_text()
    assert STARTED in log and "a warning for the log" in log
    assert (log_dir / "mcp-echo.log").stat().st_mode & 0o777 == 0o600
    terminal = capfd.readouterr()
    assert "a warning for the log" not in terminal.err + terminal.out
    assert STARTED not in terminal.err + terminal.out


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            McpServerConfig(name="gone", command="/nonexistent/mcp-server"),
            "MCP server 'gone' failed to start: the command '/nonexistent/mcp-server' was not "
            "found (its stderr is in {log})",
        ),
        (
            McpServerConfig(name="unknown", command="no-such-mcp-server-anywhere"),
            "MCP server 'unknown' failed to start: the command 'no-such-mcp-server-anywhere' "
            "was not found on PATH (its stderr is in {log})",
        ),
        (
            McpServerConfig(
                name="bad", command="sh", args=["-c", "echo 'bad config: no token' >&2; exit 3"]
            ),
            "MCP server 'bad' failed to start: it exited; its last line on stderr: "
            "'bad config: no token' (its stderr is in {log})",
        ),
    ],
)
async def test_a_server_that_cannot_start_says_why_in_one_sentence(
    config: McpServerConfig, expected: str, tmp_path: Path
) -> None:
    """Before: "FileNotFoundError: [Errno 2] No such file or directory" (no command named),
    "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)" (an exit)."""
    service = McpToolService([config], log_dir=tmp_path)
    try:
        async with asyncio.timeout(30):
            assert await service.start() == []
    finally:
        await service.close()
    log = tmp_path / f"mcp-{config.name}.log"
    assert service.problems == [expected.format(log=log)]


async def test_structured_content_is_kept_and_long_text_cut_like_command_output(
    tmp_path: Path,
) -> None:
    service = McpToolService([stdio_config()], log_dir=tmp_path)
    try:
        async with asyncio.timeout(60):
            await service.start()
        weather = await service.handle(
            McpCall(server="echo", tool="weather", arguments={"city": "Oslo"})
        )
        long = await service.handle(
            McpCall(server="echo", tool="long_text", arguments={"size": 100_000})
        )
    finally:
        await service.close()
    assert isinstance(weather, McpResult) and isinstance(long, McpResult)
    assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
    assert not weather.truncated
    [block] = long.content
    text = block["text"]
    assert long.truncated and len(text) < 30_100
    assert "[... 70,000 characters truncated ...]" in text
    assert text.startswith("a" * 15_000) and text.endswith("c" * 15_000)
