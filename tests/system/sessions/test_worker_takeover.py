"""Workers killed with SIGKILL while the model answers, three times in a row: each time another
`chronicle worker` takes the session over within the lease plus 5 s (docs/workers.md: the
call is in flight again by then), and the call the dead worker had in flight, maybe paid and
never recorded by it, is in the log as a lost call that the analytics views count, usage
and cost unknown; a replay of the session serves no lost call and matches."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import pytest

from app.events.llm import LOST
from app.replay import replay
from app.sessions.leases import request_run
from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.waiting import exited, wait_for_event
from tests.support.worker_processes import Workers, lease_owner
from tests.support.worker_sessions import recorded_session

LEASE = 6.0
KILLS = 3
#: The documented bound: a dead worker's session is going again within the lease plus this.
SLACK = 5.0


def asked_more_than(requests: int) -> Callable[[FakeLlmServer], bool]:
    return lambda fake: len(fake.requests) > requests


@pytest.fixture
def workers(fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path) -> Iterator[Workers]:
    env = agent_environment(
        fake_llm,
        app_database_url,
        tmp_path,
        CHRONICLE_WORKER_LEASE_DURATION=str(LEASE),
        CHRONICLE_WORKER_HEARTBEAT_INTERVAL="2",
        CHRONICLE_WORKER_MAX_ATTEMPTS=str(KILLS + 1),
    )
    logs = tmp_path / "worker-logs"
    logs.mkdir()
    started = Workers(env, logs)
    try:
        yield started
    finally:
        started.kill_all()


async def test_workers_killed_mid_call_are_taken_over_in_time_and_the_calls_show_as_lost(
    store: EventStore,
    fake_llm: FakeLlmServer,
    workers: Workers,
    superuser: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    held = [Reply(held=True) for _ in range(KILLS)]  # never answered: each asker is killed
    fake_llm.script(*held, Reply(tool_calls=[tool_call("finish", message="done")]))
    session = await recorded_session(store, fake_llm, workspace, "Say done.")
    # Every worker starts now: one runs the session, the others take it over in turn.
    processes = {name: workers.start(name) for name in (f"w{i}" for i in range(KILLS + 1))}
    await request_run(store, session, reason="created")
    takeovers: list[float] = []
    try:
        for kill in range(KILLS):
            await fake_llm.wait_until(asked_more_than(kill), timeout=120)
            owner = await lease_owner(store, session)
            assert owner in processes, owner
            before = await store.last_seq(session)
            doomed = processes.pop(owner)
            doomed.send_signal(signal.SIGKILL)
            killed_at = time.monotonic()
            await exited(doomed)
            await fake_llm.wait_until(asked_more_than(kill + 1), timeout=120)
            takeovers.append(time.monotonic() - killed_at)
            lost = await wait_for_event(
                store, session, lambda e: e.kind == "llm.call", after_seq=before, timeout=10
            )
            assert lost.payload["error_kind"] == LOST and owner in lost.payload["error"]
        await wait_for_event(
            store,
            session,
            lambda e: e.kind == "agent.state" and e.payload["state"] == "finished",
            timeout=60,
        )
    except (AssertionError, TimeoutError):
        print(workers.output())
        raise
    print("taken over (the call in flight again) after", [f"{t:.1f} s" for t in takeovers])
    assert all(t <= LEASE + SLACK for t in takeovers), takeovers

    events = await store.read(session)
    calls = [e for e in events if e.kind == "llm.call"]
    assert [c.payload.get("error_kind") for c in calls] == [LOST] * KILLS + [None]
    assert len(fake_llm.requests) == KILLS + 1  # as many calls recorded as the model saw
    assert (await store.verify(session)).ok

    rows = await superuser.fetch(
        "SELECT error_type, gen_ai_usage_input_tokens, gen_ai_usage_output_tokens, cost_usd, "
        "usage_unknown FROM llm_calls WHERE session_id = $1 ORDER BY seq",
        session,
    )
    assert [tuple(r) for r in rows[:KILLS]] == [(LOST, None, None, None, True)] * KILLS
    assert rows[-1]["error_type"] is None and rows[-1]["gen_ai_usage_input_tokens"] == 100
    costs = await superuser.fetchrow(
        "SELECT llm_calls, failed_llm_calls, unknown_usage_calls, gen_ai_usage_input_tokens "
        "FROM session_costs WHERE session_id = $1",
        session,
    )
    assert tuple(costs) == (KILLS + 1, KILLS, KILLS, 100)
    daily = await superuser.fetchrow(
        "SELECT sum(llm_calls) AS calls, sum(unknown_usage_calls) AS unknown FROM daily_usage"
    )
    assert (daily["calls"], daily["unknown"]) == (KILLS + 1, KILLS)

    # A replay serves the one answered call: no lost call is an answer, nothing diverges.
    result = await replay(store, session)
    assert result.matched, result.divergence
    assert (result.outcome, result.steps_recorded, result.steps_served) == ("finished", 1, 1)
