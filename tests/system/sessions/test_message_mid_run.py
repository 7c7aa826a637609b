"""A message sent while a worker runs the session (issue 23, item 5): the run in progress
reads it, and the run it asked for, claimed once the first ends, finds nothing unanswered and
ends without starting a sandbox or recording a second ``workspace.diff``. Before, that
second run restarted the sandbox and wrote a diff with no model call.

A real worker (in this process) over real PostgreSQL, a local sandbox, the scripted model
holding its first reply until the message is in the log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from app.events import Message
from app.sessions.leases import request_run
from app.sessions.sql import session_leases as leases
from app.sessions.worker import run_worker
from app.sessions.workspace import record_workspace_start
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.waiting import until, wait_for_event
from tests.support.worker_sessions import recorded_session


async def no_run_left(store: EventStore, session: object) -> bool:
    return not await store.pool.fetchval(
        "SELECT count(*) FROM session_leases WHERE session_id = $1", session
    )


async def test_a_message_sent_mid_run_is_read_by_that_run_and_leaves_no_idle_run(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo one > one.txt")], held=True),
        Reply(tool_calls=[tool_call("finish", message="one.txt written, and hi")]),
    )
    settings = settings_for(fake_llm, tmp_path, worker_heartbeat_interval=0.5)
    session = await recorded_session(store, fake_llm, workspace, "Write one.txt.")
    baseline = await record_workspace_start(store, session, workspace, settings)  # as the API
    if baseline is not None:
        baseline.close()
    stop = asyncio.Event()
    worker = asyncio.create_task(
        run_worker(store, settings, stop=stop, worker_id="only", max_sessions=1)
    )
    try:
        await request_run(store, session, reason="created")
        await fake_llm.wait_until(lambda s: s.in_flight == 1, timeout=120)
        # what the API does with a message: record it, then ask for a run (one runs now)
        await store.append(session, [Message(content="also say hi", source="user")])
        assert await leases.request_run(store, session, "message") == "running"
        fake_llm.release_held()
        await wait_for_event(
            store,
            session,
            lambda e: (
                e.kind == "agent.state"
                and e.source == "agent"
                and e.payload["state"] in ("finished", "error")
            ),
            timeout=120,
        )
        # the run the message asked for is claimed once the first ends, and ends too
        await until(lambda: no_run_left(store, session), timeout=60, what="both runs ended")
    finally:
        stop.set()
        await asyncio.wait_for(worker, 60)
    events = await store.read(session)
    kinds = [e.kind for e in events]
    states = [e.payload["state"] for e in events if e.kind == "agent.state"]
    assert states[-1] == "finished", [(e.kind, e.payload) for e in events[-6:]]
    # the run in progress read the message: its second model call has it
    assert len(fake_llm.requests) == 2
    assert "also say hi" in json.dumps(fake_llm.requests[1]["messages"])
    # one model-driven run: one sandbox start, one workspace.diff, and nothing after it
    assert kinds.count("llm.call") == 2
    assert kinds.count("runtime.starting") == 1, kinds
    assert kinds.count("workspace.diff") == 1, kinds
    assert kinds[-1] == "workspace.diff", kinds
