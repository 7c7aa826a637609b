"""Two real `chronicle worker` processes on one database, the scripted model server, real
local sandboxes: a worker killed with SIGKILL mid-command is replaced by the other within
the lease plus 5 s (the command reported interrupted, never run again), and SIGTERM drains
(the command in flight finishes, no model call follows, the lease is handed back, exit 0)."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.events import AgentState
from app.sessions.leases import request_run
from app.sessions.worker import DRAINED
from app.store import EventStore
from tests.support.agent_cli import agent_environment, file_says
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.waiting import exited, until, wait_for_event
from tests.support.worker_processes import Workers, lease_owner
from tests.support.worker_sessions import recorded_session

LEASE = 3.0
# &&, not ;: when the process tree is killed, `sleep` may die before bash does.
SLOW = "echo started >> log.txt && sleep 30 && echo slow >> log.txt"


@pytest.fixture
def workers(fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path) -> Iterator[Workers]:
    env = agent_environment(
        fake_llm,
        app_database_url,
        tmp_path,
        CHRONICLE_WORKER_LEASE_DURATION=str(LEASE),
        CHRONICLE_WORKER_HEARTBEAT_INTERVAL="0.5",
    )
    logs = tmp_path / "worker-logs"
    logs.mkdir()
    started = Workers(env, logs)
    try:
        yield started
    finally:
        started.kill_all()


async def test_a_worker_killed_mid_command_is_replaced_within_the_lease(
    store: EventStore, fake_llm: FakeLlmServer, workers: Workers, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo first >> log.txt")]),
        Reply(tool_calls=[tool_call("execute_bash", command=SLOW, timeout=60)]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo after >> log.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    session = await recorded_session(store, fake_llm, workspace, "Log three lines.")
    first, second = workers.start("worker-a"), workers.start("worker-b")
    await request_run(store, session, reason="created")
    log_file = workspace / "log.txt"
    try:
        await until(file_says(log_file, "started"), timeout=60, what="the slow command running")
        owner = await lease_owner(store, session)
        assert owner in ("worker-a", "worker-b")
        doomed, survivor = (first, second) if owner == "worker-a" else (second, first)
        before_kill = await store.last_seq(session)
        doomed.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        await exited(doomed)
        # The survivor takes the session over and reports the command interrupted.
        interrupted = await wait_for_event(
            store,
            session,
            lambda e: e.kind == "error" and e.payload.get("error_type") == "interrupted",
            after_seq=before_kill,
            timeout=LEASE + 30,
        )
        taken_over_after = time.monotonic() - killed_at
        print(f"resumed by the other worker {taken_over_after:.1f} s after the kill")
        assert taken_over_after <= LEASE + 5, f"resumed {taken_over_after:.1f} s after the kill"
        await wait_for_event(
            store,
            session,
            lambda e: e.kind == "agent.state" and e.payload["state"] == "finished",
            after_seq=interrupted.seq,
            timeout=60,
        )
        assert survivor.poll() is None
        await until(lambda: _no_lease(store, session), timeout=10, what="the lease released")
    except AssertionError:
        print(workers.output())
        raise
    # The interrupted command was not run again ("started" once, never "slow").
    assert log_file.read_text() == "first\nstarted\nafter\n"
    events = await store.read(session)
    errors = [e for e in events if e.kind == "error"]
    assert [e.payload["error_type"] for e in errors] == ["interrupted"]
    slow = next(e for e in events if e.kind == "run" and e.payload["command"] == SLOW)
    assert errors[0].cause == slow.seq
    assert sum(1 for e in events if e.kind == "run" and e.payload["command"] == SLOW) == 1
    assert sum(1 for e in events if e.kind == "llm.call") == 4
    assert "interrupted" in str(fake_llm.requests[2]["messages"])
    assert (await store.verify(session)).ok


async def _no_lease(store: EventStore, session: uuid.UUID) -> bool:
    return (
        await store.pool.fetchval(
            "SELECT count(*) FROM session_leases WHERE session_id = $1", session
        )
        == 0
    )


async def test_sigterm_drains_the_step_in_flight_and_hands_the_session_back(
    store: EventStore, fake_llm: FakeLlmServer, workers: Workers, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    in_flight = "echo started >> log.txt && sleep 3 && echo done >> log.txt"
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command=in_flight, timeout=60)]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo after >> log.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    session = await recorded_session(store, fake_llm, workspace, "Log lines.")
    draining = workers.start("draining")
    await request_run(store, session, reason="created")
    log_file = workspace / "log.txt"
    try:
        await until(
            file_says(log_file, "started"), timeout=60, what="the command running", process=draining
        )
        draining.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            code = await exited(draining)
        assert code == 0, workers.output()
    except (AssertionError, TimeoutError):
        print(workers.output())
        raise
    # The command in flight finished; no model call followed it.
    assert log_file.read_text() == "started\ndone\n"
    assert len(fake_llm.requests) == 1
    events = await store.read(session)
    [output] = [e for e in events if e.kind == "run.output"]
    assert output.payload["exit_code"] == 0
    assert not [e for e in events if e.kind == "error"]
    stops = [e for e in events if e.kind == "agent.state" and e.payload["state"] == "stopped"]
    assert stops and stops[-1].payload["reason"] == DRAINED
    # The lease was handed back, not dropped: the session still waits for a worker.
    row = await store.pool.fetchrow(
        "SELECT owner, attempts FROM session_leases WHERE session_id = $1", session
    )
    assert row is not None and row["owner"] is None and row["attempts"] == 0
    assert await store.pool.fetchval("SELECT count(*) FROM workers") == 0  # it said goodbye

    # Another worker continues it from the log: nothing to report as interrupted.
    workers.start("next")
    try:
        finished = await wait_for_event(
            store,
            session,
            lambda e: e.kind == "agent.state" and e.payload["state"] == "finished",
            after_seq=events[-1].seq,
            timeout=60,
        )
    except AssertionError:
        print(workers.output())
        raise
    assert finished is not None
    assert log_file.read_text() == "started\ndone\nafter\n"
    assert not [e for e in await store.read(session) if e.kind == "error"]
    await until(lambda: _no_lease(store, session), timeout=10, what="the lease released")


async def test_a_session_the_user_stopped_is_not_run_by_a_worker(
    store: EventStore, fake_llm: FakeLlmServer, workers: Workers, tmp_path: Path
) -> None:
    """Stopped while it waited for a worker: the worker's run keeps the user's stop (a
    `chronicle resume` by the user would continue it; a worker has no such say)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = await recorded_session(store, fake_llm, workspace, "Do nothing.")
    await store.append(session, [AgentState(state="stopped", source="user")])
    await request_run(store, session, reason="message")
    workers.start("worker")
    try:
        await wait_for_event(
            store,
            session,
            lambda e: e.kind == "agent.state" and e.source == "agent",
            timeout=60,
        )
        await until(lambda: _no_lease(store, session), timeout=10, what="the lease released")
    except AssertionError:
        print(workers.output())
        raise
    events = await store.read(session)
    states = [(e.source, e.payload["state"]) for e in events if e.kind == "agent.state"]
    assert ("user", "running") not in states
    assert states[-1] == ("agent", "stopped")
    assert fake_llm.requests == []
