"""`chronicle projections run` as real processes: killed with SIGKILL mid-stream it resumes
exactly after its last committed batch; two processes of the same projection never both
apply. Both are checked the strongest way: the rows equal a fresh rebuild row for row, and
say what the workload wrote (an event applied twice would double a count or a cost)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import asyncpg

from app.config import Settings
from app.store import EventStore
from tests.support.agent_cli import start
from tests.support.cli import chronicle, cli_environment
from tests.support.projection_workload import Workload, append_workload

STATE_SQL = "SELECT * FROM session_state ORDER BY session_id"
POSITION_SQL = "SELECT global_position FROM projections WHERE name = 'session_state'"


def runner_environment(app_database_url: str, tmp_path: Path) -> dict[str, str]:
    return cli_environment(app_database_url, tmp_path) | {
        "CHRONICLE_PROJECTIONS_BATCH_SIZE": "5",  # many small transactions: a kill lands mid-way
        "CHRONICLE_PROJECTIONS_STANDBY_INTERVAL": "0.2",
        "CHRONICLE_POLL_INTERVAL": "0.5",
    }


async def status(env: dict[str, str]) -> dict[str, Any]:
    shown = await asyncio.to_thread(chronicle, "projections", "status", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    [line] = shown.stdout.splitlines()
    return dict(json.loads(line))


async def until_caught_up(env: dict[str, str], process: subprocess.Popen[str]) -> None:
    async with asyncio.timeout(120):
        while True:
            assert process.poll() is None, process.communicate()
            now = await status(env)
            if now["live"] and now["behind"] == 0:
                return
            await asyncio.sleep(0.2)


async def rows(superuser: asyncpg.Connection) -> list[dict[str, Any]]:
    return [dict(r) for r in await superuser.fetch(STATE_SQL)]


def check_against_workload(found: list[dict[str, Any]], workload: Workload) -> None:
    assert len(found) == len(workload.sessions)
    for row in found:
        expected = workload.sessions[row["session_id"]]
        assert (row["last_seq"], row["steps"], row["model_calls"]) == (
            expected.events,
            expected.steps,
            expected.model_calls,
        )
        assert (row["input_tokens"], row["errors"], row["status"]) == (
            expected.input_tokens,
            expected.errors,
            expected.status,
        )
        if expected.priced:
            assert row["cost_usd"] == expected.cost


async def rebuilt_equals(superuser: asyncpg.Connection, env: dict[str, str]) -> None:
    incremental = await rows(superuser)
    rebuilt = await asyncio.to_thread(
        chronicle, "projections", "rebuild", "session_state", env=env, timeout=120
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stdout.startswith("rebuilt session_state")
    assert await rows(superuser) == incremental


def stop(process: subprocess.Popen[str], how: signal.Signals) -> str:
    if process.poll() is None:
        process.send_signal(how)
    _, err = process.communicate(timeout=30)
    return err


async def open_store(url: str, settings: Settings) -> EventStore:
    return await EventStore.open(url, config=settings.store, masker=settings.masker())


async def test_a_runner_killed_mid_stream_resumes_exactly_where_it_committed(
    app_database_url: str, superuser: asyncpg.Connection, settings: Settings, tmp_path: Path
) -> None:
    env = runner_environment(app_database_url, tmp_path)
    async with await open_store(app_database_url, settings) as store:
        workload = await append_workload(store, 300, seed=21)
        head = await superuser.fetchval("SELECT max(global_position) FROM events")
        runner = start("projections", "run", env=env)
        try:
            async with asyncio.timeout(60):
                while not (await superuser.fetchval(POSITION_SQL) or 0):
                    assert runner.poll() is None, runner.communicate()
                    await asyncio.sleep(0.01)
            runner.kill()  # SIGKILL: no drain, no unlock; the connection just ends
            runner.wait(timeout=30)
            killed_at = await superuser.fetchval(POSITION_SQL)
            assert 0 < killed_at < head, "the kill should land mid-stream"
            # The log goes on while no runner is live.
            more = await append_workload(store, 50, seed=22)
            workload.sessions.update(more.sessions)

            runner = start("projections", "run", env=env)
            await until_caught_up(env, runner)
        finally:
            stop(runner, signal.SIGTERM)
    check_against_workload(await rows(superuser), workload)
    await rebuilt_equals(superuser, env)


async def test_two_runner_processes_never_both_apply(
    app_database_url: str, superuser: asyncpg.Connection, settings: Settings, tmp_path: Path
) -> None:
    env = runner_environment(app_database_url, tmp_path)
    first = start("-v", "projections", "run", env=env)
    second: subprocess.Popen[str] | None = None
    try:
        async with await open_store(app_database_url, settings) as store:
            await until_caught_up(env, first)
            second = start("-v", "projections", "run", env=env)
            writing = asyncio.create_task(append_workload(store, 200, seed=31))
            await asyncio.sleep(1.0)
            now = await status(env)
            assert now["live"] and now["runner"].endswith(f"pid {first.pid}")
            assert second.poll() is None  # standing by, not failed
            first.kill()  # mid-stream: the second takes over where the first committed
            workload = await writing
            await until_caught_up(env, second)
            now = await status(env)
            assert now["runner"].endswith(f"pid {second.pid}")
    finally:
        first_err = stop(first, signal.SIGKILL)
        second_err = stop(second, signal.SIGTERM) if second else ""
    assert "applied" in first_err
    assert "another process applies it; standing by" in second_err
    check_against_workload(await rows(superuser), workload)
    await rebuilt_equals(superuser, env)
