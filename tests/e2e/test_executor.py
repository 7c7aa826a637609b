"""The executor against a real event store and a real sandbox."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.events import FileWrite, Message, Run
from app.runtime import LocalRuntime
from app.runtime.executor import Executor, checkpoint_name
from app.store import EventStore, Position, RecordedEvent


@contextlib.asynccontextmanager
async def executing(
    store: EventStore, session: uuid.UUID, runtime: LocalRuntime
) -> AsyncIterator[None]:
    task = asyncio.create_task(Executor(store, session, runtime).run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def observations(store: EventStore, session: uuid.UUID, count: int) -> list[RecordedEvent]:
    """Wait until the session has ``count`` observations; return them."""
    async with asyncio.timeout(30):
        while True:
            found = [e for e in await store.read(session) if e.source == "environment"]
            if len(found) >= count:
                return found
            await asyncio.sleep(0.05)


@pytest.fixture
async def sandbox(workspace: Path) -> AsyncIterator[LocalRuntime]:
    runtime = LocalRuntime(workspace, no_output_timeout=2)
    await runtime.start()
    await runtime.wait_ready(10)
    try:
        yield runtime
    finally:
        await runtime.close()


async def test_each_action_is_answered_once_in_order(
    store: EventStore, sandbox: LocalRuntime, workspace: Path
) -> None:
    session = uuid.uuid4()
    async with executing(store, session, sandbox):
        await store.append(session, [Message(content="go"), Run(command="cd /tmp && pwd")])
        await store.append(session, [FileWrite(path="n.txt", content="1\n"), Run(command="pwd")])
        found = await observations(store, session, 3)
    assert [(e.kind, e.cause) for e in found] == [
        ("run.output", 2),
        ("file.write.output", 3),
        ("run.output", 4),
    ]
    assert found[0].payload["output"] == "/tmp\n"
    assert found[2].payload["output"] == "/tmp\n"  # the same shell
    assert (workspace / "n.txt").read_text() == "1\n"


async def test_a_restarted_executor_runs_nothing_twice(
    store: EventStore, sandbox: LocalRuntime, workspace: Path
) -> None:
    session = uuid.uuid4()
    async with executing(store, session, sandbox):
        await store.append(session, [Run(command=f"echo {i} >> ran.txt") for i in range(5)])
        await observations(store, session, 5)
    async with executing(store, session, sandbox):
        await store.append(session, [Run(command="echo last >> ran.txt")])
        await observations(store, session, 6)
        await asyncio.sleep(0.3)
    assert (workspace / "ran.txt").read_text().split() == ["0", "1", "2", "3", "4", "last"]
    assert len([e for e in await store.read(session) if e.source == "environment"]) == 6


async def test_interrupted_action_is_reported_not_rerun(
    store: EventStore, sandbox: LocalRuntime, workspace: Path
) -> None:
    session = uuid.uuid4()
    [started] = await store.append(session, [Run(command="echo ran >> once.txt")])
    # The executor had begun this action when its process died: checkpoint saved, no answer.
    await store.save_checkpoint(
        checkpoint_name(session), Position(started.tx, started.global_position)
    )
    await store.append(session, [Run(command="echo fresh >> fresh.txt")])  # never started
    async with executing(store, session, sandbox):
        found = await observations(store, session, 2)
    interrupted = next(e for e in found if e.cause == 1)
    assert interrupted.kind == "error" and "interrupted" in interrupted.payload["message"]
    assert "may have partly run" in interrupted.payload["message"]
    assert not (workspace / "once.txt").exists()
    assert (workspace / "fresh.txt").read_text() == "fresh\n"
    assert next(e for e in found if e.cause == 2).kind == "run.output"


async def test_dead_sandbox_gives_runtime_failed_and_errors_not_a_hang(
    store: EventStore, sandbox: LocalRuntime
) -> None:
    session = uuid.uuid4()
    assert sandbox.process is not None
    os.killpg(sandbox.process.pid, signal.SIGKILL)
    await sandbox.process.wait()
    async with executing(store, session, sandbox):
        await store.append(session, [Run(command="echo 1"), Run(command="echo 2")])
        found = await observations(store, session, 3)
    kinds = [(e.kind, e.cause) for e in found]
    assert ("runtime.failed", None) in kinds
    assert ("error", 1) in kinds and ("error", 2) in kinds
    failed = next(e for e in found if e.kind == "runtime.failed")
    assert "unreachable" in failed.payload["message"]


async def test_timeouts_come_back_as_observations(store: EventStore, sandbox: LocalRuntime) -> None:
    session = uuid.uuid4()
    async with executing(store, session, sandbox):
        await store.append(session, [Run(command="sleep 600", timeout=1), Run(command="echo next")])
        found = await observations(store, session, 2)
    assert found[0].payload["timed_out"] is True
    assert found[1].payload["output"] == "next\n"


async def test_executor_heartbeats_an_idle_sandbox(
    store: EventStore, sandbox: LocalRuntime
) -> None:
    settings = store.settings.model_copy(update={"sandbox_heartbeat_interval": 0.2})
    task = asyncio.create_task(Executor(store, uuid.uuid4(), sandbox, settings=settings).run())
    try:
        await asyncio.sleep(1.2)
        assert sandbox.client is not None
        idle = await sandbox.client.idle_seconds()
        assert idle is not None and idle < 0.6
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
