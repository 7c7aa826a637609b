"""An evaluation run started through an API process that runs no worker (`serve --role api`)
is run and scored by a worker process (`serve --role worker`), at most ``concurrency`` trials
at a time: the API process never runs an agent nor scores a trial.

Without the worker's after-run hook nothing would score the trials and the run would never
finish; without the run's bound the third trial would be recorded before any was scored."""

from __future__ import annotations

import signal
from datetime import datetime

import httpx

from tests.support.chronicle_server import start_server, start_worker
from tests.support.evaluation_api import bearer, wait_finished
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

SUITE = {
    "name": "arithmetic",
    "tasks": [
        {"id": "six-sevens", "prompt": "What is six times seven?", "answer": "42"},
        {"id": "answer", "prompt": "The answer to everything?", "answer": "regex:^4\\d$"},
    ],
}


def test_a_run_is_run_and_scored_by_a_worker_process_concurrency_at_a_time(
    database_env: dict[str, str], fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(*[Reply(tool_calls=[tool_call("finish", message="42")]) for _ in range(4)])
    env = {**database_env, "CHRONICLE_LLM_BASE_URL": fake_llm.base_url}
    api = start_server(env, "--role", "api")
    worker = start_worker(env)
    try:
        token = api.token("grace")
        started = httpx.post(
            f"{api.url}/api/evaluations",
            headers=bearer(token),
            json={"name": "twice", "suite": SUITE, "trials": 2, "concurrency": 2},
        )
        assert started.status_code == 202, started.text
        assert (started.json()["total"], started.json()["started"]) == (4, 2)
        run = wait_finished(api.url, token, "twice")
        assert (run["total"], run["done"], run["passed"], run["failed"]) == (4, 4, 4, 0)
        report = httpx.get(f"{api.url}/api/evaluations/twice/report", headers=bearer(token))
        body = report.json()
        assert (body["total"], body["passed"], body["epochs"], body["pass_hat_k"]) == (4, 4, 2, 1)
        assert len(fake_llm.requests) == 4  # one model call per trial, none from the API

        created: list[datetime] = []
        scored: list[datetime] = []
        for task in body["tasks"]:
            events = httpx.get(
                f"{api.url}/api/sessions/{task['session_id']}/events?limit=1000",
                headers=bearer(token),
            ).json()["events"]
            created.append(datetime.fromisoformat(events[0]["created_at"]))
            scored.append(
                min(datetime.fromisoformat(e["created_at"]) for e in events
                    if e["kind"] == "eval.score")
            )  # fmt: skip
        created.sort()
        # the first two trials were recorded at once; each later one only after a trial
        # was scored (two unscored at most)
        assert created[2] >= sorted(scored)[0] and created[3] >= sorted(scored)[1]
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
        api.stop()
