"""The executor (the sandbox's action worker) against a real event store and a real sandbox."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from app.config import Settings
from app.events import FileWrite, Message, Run
from app.runtime import LocalRuntime
from app.runtime.executor import Executor, ExecutorConfig, checkpoint_name
from app.store import EventStore, Position, RecordedEvent, WorkerStopped
from tests.support.subscriptions import nothing_more
from tests.support.waiting import wait_for_events


@contextlib.asynccontextmanager
async def executing(
    store: EventStore,
    session: uuid.UUID,
    runtime: LocalRuntime,
    config: ExecutorConfig | None = None,
) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(Executor(store, session, runtime, config).run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, WorkerStopped):
            await task


async def observations(store: EventStore, session: uuid.UUID, count: int) -> list[RecordedEvent]:
    """The session's first ``count`` events from the environment, once they are recorded."""
    return await wait_for_events(store, session, count, lambda e: e.source == "environment")


async def kill(sandbox: LocalRuntime) -> None:
    """Kill the sandbox's whole process group, as a crash or the OOM killer would."""
    assert sandbox.process is not None
    os.killpg(sandbox.process.pid, signal.SIGKILL)
    await sandbox.process.wait()


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
        first = await store.append(session, [Message(content="go"), Run(command="cd /tmp && pwd")])
        # The first observation may land before this second batch: take its seqs as recorded.
        second = await store.append(
            session, [FileWrite(path="n.txt", content="1\n"), Run(command="pwd")]
        )
        found = await observations(store, session, 3)
    assert [(e.kind, e.cause) for e in found] == [
        ("run.output", first[1].seq),
        ("file.write.output", second[0].seq),
        ("run.output", second[1].seq),
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
        sixth = (await observations(store, session, 6))[-1]
        async with store.subscribe(session, after_seq=sixth.seq) as later:
            assert await nothing_more(later)  # no action answered twice
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


async def test_a_dead_sandbox_is_restarted_and_the_agent_told(
    store: EventStore, sandbox: LocalRuntime, workspace: Path
) -> None:
    """Before the action worker, every later action answered "the sandbox is unavailable"
    and the run went on to finish."""
    session = uuid.uuid4()
    async with executing(store, session, sandbox):
        await store.append(session, [Run(command="export MARK=old; echo kept > kept.txt")])
        await observations(store, session, 1)
        await kill(sandbox)
        await store.append(session, [Run(command="echo 1"), Run(command="echo [$MARK]")])
        found = await observations(store, session, 4)
    kinds = [(e.kind, e.cause) for e in found]
    assert kinds == [
        ("run.output", 1),
        ("runtime.restarted", None),
        ("error", 3),
        ("run.output", 4),
    ]
    restarted = found[1].payload
    assert restarted["restart"] == 1 and restarted["max_restarts"] == 3
    assert "unreachable" in restarted["reason"]
    assert "Every process you started in it is gone" in restarted["message"]
    assert found[2].payload["error_type"] == "sandbox_restarted"
    assert "may have partly run" in found[2].payload["message"]
    assert found[3].payload["output"] == "[]\n"  # a new shell: the old one's variable is gone
    assert (workspace / "kept.txt").read_text() == "kept\n"


async def test_past_the_restart_budget_the_worker_stops_with_runtime_failed(
    store: EventStore, sandbox: LocalRuntime
) -> None:
    session = uuid.uuid4()
    config = ExecutorConfig(max_restarts=1)
    async with executing(store, session, sandbox, config) as task:
        await kill(sandbox)
        await store.append(session, [Run(command="echo 1")])
        await observations(store, session, 2)  # restarted, and the action's error
        await kill(sandbox)
        await store.append(session, [Run(command="echo 2"), Run(command="echo 3")])
        with pytest.raises(WorkerStopped, match="already restarted it 1 times"):
            async with asyncio.timeout(30):
                await task
    found = [(e.kind, e.cause) for e in await store.read(session) if e.source == "environment"]
    assert found == [
        ("runtime.restarted", None),
        ("error", 1),
        ("runtime.failed", None),
        ("error", 4),
    ]  # the run ends here (the session runner records why); 5 never started: resume runs it


async def test_an_action_failing_in_a_live_sandbox_is_only_that_actions_error(
    store: EventStore, sandbox: LocalRuntime
) -> None:
    """Only a failed liveness check marks the sandbox dead: here the server refuses our
    token for one action (a transport-level failure) but still answers /alive."""
    session = uuid.uuid4()
    assert sandbox.client is not None
    headers = sandbox.client._http.headers
    good = headers["Authorization"]
    async with executing(store, session, sandbox):
        headers["Authorization"] = "Bearer wrong"
        await store.append(session, [Run(command="echo 1")])
        await observations(store, session, 1)
        headers["Authorization"] = good
        await store.append(session, [Run(command="echo 2")])
        found = await observations(store, session, 2)
    assert [(e.kind, e.cause) for e in found] == [("error", 1), ("run.output", 3)]
    assert "refused the token" in found[0].payload["message"]
    assert found[0].payload["error_type"] == "sandbox"
    assert found[1].payload["output"] == "2\n"


async def test_the_heartbeat_restarts_a_sandbox_that_died_while_idle(
    store: EventStore, sandbox: LocalRuntime
) -> None:
    session = uuid.uuid4()
    config = ExecutorConfig(heartbeat_interval=0.2)
    async with executing(store, session, sandbox, config):
        await kill(sandbox)
        [restarted] = await observations(store, session, 1)
        assert restarted.kind == "runtime.restarted"
        assert "heartbeat failed" in restarted.payload["reason"]
        await store.append(session, [Run(command="echo after")])
        found = await observations(store, session, 2)
    assert found[1].payload["output"] == "after\n"


async def test_an_answer_the_store_refuses_becomes_an_error(
    app_database_url: str, settings: Settings, sandbox: LocalRuntime
) -> None:
    """An observation the store refused used to end the executor's task silently, leaving
    the action unanswered. Long strings go to blobs now, so the refusal needs a per-event
    limit below the smallest blob (1 KiB): 900 characters of output cannot fit in 600 bytes."""
    small = settings.model_copy(update={"max_event_bytes": 600})
    async with await EventStore.open(
        app_database_url, config=small.store, masker=small.masker()
    ) as store:
        session = uuid.uuid4()
        async with executing(store, session, sandbox):
            big = Run(command="head -c 900 /dev/zero | tr '\\0' x")
            await store.append(session, [big, Run(command="echo still here")])
            found = await observations(store, session, 2)
    assert [(e.kind, e.cause) for e in found] == [("error", 1), ("run.output", 2)]
    assert found[0].payload["error_type"] == "unrecordable"
    assert "could not be recorded" in found[0].payload["message"]
    assert "over the limit" in found[0].payload["message"]
    assert found[1].payload["output"] == "still here\n"


async def test_a_worker_that_cannot_record_stops_and_says_why(
    store: EventStore, superuser: asyncpg.Connection, sandbox: LocalRuntime
) -> None:
    session = uuid.uuid4()
    await store.append(session, [Run(command="echo 1")])
    await superuser.execute(
        """
        DO $$ DECLARE f regprocedure; BEGIN
          FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE proname LIKE 'chronicle_append%'
          LOOP EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC, chronicle_app', f);
          END LOOP;
        END $$;
        """
    )
    with pytest.raises(WorkerStopped, match="cannot record answers in the log"):
        async with asyncio.timeout(30):
            await Executor(store, session, sandbox).run()


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
    config = ExecutorConfig(heartbeat_interval=0.2)
    task = asyncio.create_task(Executor(store, uuid.uuid4(), sandbox, config).run())
    try:
        await asyncio.sleep(1.2)  # the time passing is the test: six heartbeats are due
        assert sandbox.client is not None
        idle = await sandbox.client.idle_seconds()
        assert idle is not None and idle < 0.6
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
