"""An API evaluation run whose worker dies (SIGKILL) after a trial ended and before the trial
was scored still finishes: the other worker's sweep scores the trial and records the next one,
and every trial is scored exactly once.

The kill is aimed, not timed: the first task's check sleeps (a marker command) in its
sandbox, a child of the worker scoring the trial, and that worker is killed while the check
runs, when the trial has ended and has no score. Before the sweep (and with the old scoring,
which appended the default scores before running the check) the run stayed ``running``
forever with the second trial never recorded: the wait for ``finished`` below failed.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from typing import Any

import httpx
import psutil

from app.evaluation.api_runs import trial_session_id
from tests.support.chronicle_server import start_server, start_worker
from tests.support.evaluation_api import bearer, wait_finished
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

#: The check's marker: a process of this command line runs while the first trial is scored.
CHECK_SLEEP = "7.25"
SUITE = {
    "name": "recovery",
    "tasks": [
        {
            "id": "slow-check",
            "prompt": "What is six times seven?",
            "answer": "42",
            "check": f"sleep {CHECK_SLEEP} && true",
        },
        {"id": "second", "prompt": "The answer to everything?", "answer": "42"},
    ],
}


def worker_running_check(workers: list[subprocess.Popen[str]], timeout: float) -> int:
    """The pid of the worker whose descendant runs the first trial's check."""
    pids = {worker.pid for worker in workers}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in psutil.process_iter(["cmdline"]):
            if process.info["cmdline"] != ["sleep", CHECK_SLEEP]:
                continue
            with_parents = [process.pid, *(parent.pid for parent in process.parents())]
            owners = pids.intersection(with_parents)
            if owners:
                return owners.pop()
        time.sleep(0.05)
    raise AssertionError("no worker ran the first trial's check")


def events_of(url: str, token: str, session: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{url}/api/sessions/{session}/events?limit=1000", headers=bearer(token), timeout=30
    )
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


def scores_of(events: list[dict[str, Any]]) -> list[str]:
    return [event["payload"]["name"] for event in events if event["kind"] == "eval.score"]


def test_a_trial_whose_worker_died_before_scoring_it_is_scored_once_and_the_run_finishes(
    database_env: dict[str, str], fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(*[Reply(tool_calls=[tool_call("finish", message="42")]) for _ in range(2)])
    env = {
        **database_env,
        "CHRONICLE_LLM_BASE_URL": fake_llm.base_url,
        "CHRONICLE_RUNTIME": "local",
        "CHRONICLE_WORKER_SWEEP_INTERVAL": "1",
    }
    api = start_server(env, "--role", "api")
    workers = [start_worker(env), start_worker(env)]
    try:
        token = api.token("grace")
        started = httpx.post(
            f"{api.url}/api/evaluations",
            headers=bearer(token),
            json={"name": "recovered", "suite": SUITE, "runtime": "local"},
        )
        assert started.status_code == 202, started.text
        key = started.json()["key"]  # the name is grace's: recorded as recovered@<her id>
        first = str(trial_session_id(key, "slow-check", 1))
        second = str(trial_session_id(key, "second", 1))

        scorer = worker_running_check(workers, timeout=120)
        ended = events_of(api.url, token, first)
        assert [e["payload"]["state"] for e in ended if e["kind"] == "agent.state"][-1] == (
            "finished"
        )
        dead = next(worker for worker in workers if worker.pid == scorer)
        dead.send_signal(signal.SIGKILL)
        dead.wait(timeout=30)
        # killed between the trial's end and its scores: nothing of the scoring was recorded
        assert scores_of(events_of(api.url, token, first)) == []

        run = wait_finished(api.url, token, "recovered")
        assert (run["total"], run["started"], run["done"], run["passed"]) == (2, 2, 2, 2)
        first_scores = Counter(scores_of(events_of(api.url, token, first)))
        second_scores = Counter(scores_of(events_of(api.url, token, second)))
        assert first_scores == Counter(["finished", "answer", "cost", "steps", "check"])
        assert second_scores == Counter(["finished", "answer", "cost", "steps"])
        assert len(fake_llm.requests) == 2  # each trial run once
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                assert worker.wait(timeout=60) == 0
        api.stop()
