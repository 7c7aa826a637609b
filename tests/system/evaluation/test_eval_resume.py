"""`chronicle eval run --resume NAME` after the run's process was killed (SIGKILL: it records
nothing more) or interrupted (SIGINT: it stops its session and says how to resume) while a
task's command ran: finished trials are kept (their model calls are not made again), the
trial that was mid-flight runs again from the start in a fresh workspace as a new attempt,
the tasks never started run, and the report shows the run was resumed.

The SIGINT case failed before the run waited for every trial to record its stop: the trial
waiting for its turn ended the gather at once, the command closed the store, and the slow
trial's ``stopped`` never reached the log (its status stayed ``working``)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path
from uuid import UUID

import pytest

from app.projections import SessionState, bring_up_to_date
from app.sessions.sql.session_rows import list_sessions
from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.forked import chronicle_popen
from tests.support.waiting import exited, until

SUITE = """
name: resumable
tasks:
  - id: first
    prompt: Say done.
  - id: slow
    prompt: Write done.txt.
    check: test -f done.txt
  - id: last
    prompt: Say done.
"""


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
async def test_an_interrupted_run_resumes_without_redoing_finished_trials(
    stop: signal.Signals,
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
    app_database_url: str,
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    fake_llm.script(
        Reply(tool_calls=[tool_call("finish", message="done")]),
        Reply(tool_calls=[tool_call("execute_bash", command="touch started && sleep 60",
                                    timeout=120)]),
    )  # fmt: skip
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    run = chronicle_popen(
        ["eval", "run", str(suite), "--name", "nightly"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    first_workspace = tmp_path / "data" / "evaluations" / "nightly" / "slow" / "epoch-1"
    try:
        await until(lambda: (first_workspace / "started").exists(), timeout=120,
                    what="the slow task's command running", process=run)  # fmt: skip
        busy = await asyncio.to_thread(chronicle, "eval", "run", "--resume", "nightly", env=env)
        assert busy.returncode == 2 and "is running in another process" in busy.stderr
        run.send_signal(stop)
        code = await asyncio.wait_for(exited(run), 60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)
    stderr = run.stderr.read() if run.stderr else ""
    if stop == signal.SIGINT:
        assert code == 130, stderr
        assert "interrupted; continue it with chronicle eval run --resume nightly" in stderr
    else:
        assert code == -signal.SIGKILL
    assert len(fake_llm.requests) == 2

    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="touch done.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    resumed = await asyncio.to_thread(
        chronicle, "eval", "run", "--resume", "nightly", "--json", env=env, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    # first: kept (no model call); slow: run again (2 calls); last: run (1 call).
    assert len(fake_llm.requests) == 2 + 3
    assert resumed.stderr.rstrip().endswith("nightly [3/3] passed 3, failed 0, cost $0")
    assert "nightly [1/3] passed 1, failed 0" in resumed.stderr  # the kept trial, at once
    results = json.loads(resumed.stdout)
    assert [(t["task_id"], t["passed"]) for t in results["tasks"]] == [
        ("first", True), ("slow", True), ("last", True),
    ]  # fmt: skip
    assert (tmp_path / "data" / "evaluations" / "nightly" / "slow" / "epoch-1-attempt-2"
            / "done.txt").exists()  # fmt: skip

    report = json.loads(chronicle("eval", "report", "nightly", "--json", env=env).stdout)
    assert (report["total"], report["passed"]) == (3, 3)
    assert (report["resumes"], report["rerun_sessions"]) == (1, 1)
    counted = {t["session_id"] for t in report["tasks"]}
    assert counted == {t["session_id"] for t in results["tasks"]}
    text = chronicle("eval", "report", "nightly", env=env).stdout
    assert "resumed: 1 times, 1 interrupted sessions run again" in text

    # The interrupted session stays in the log as it ended: superseded, not counted.
    await bring_up_to_date(store, SessionState())
    listed = [r for r in await list_sessions(store, limit=20) if r.evaluation_run == "nightly"]
    left = [r for r in listed if str(r.session_id) not in counted]
    assert len(listed) == 4 and len(left) == 1
    if stop == signal.SIGINT:
        assert (left[0].status, left[0].state_reason) == ("stopped", "interrupted by SIGINT")
    else:
        assert (left[0].status, left[0].claimed) == ("working", False)
    created = {i: (await store.read(UUID(i)))[0].payload["config"] for i in counted}
    attempts = sorted((c["evaluation_task"]["id"], c["evaluation_attempt"], c["evaluation_resume"])
                      for c in created.values())  # fmt: skip
    assert attempts == [("first", 1, 0), ("last", 1, 1), ("slow", 2, 1)]
