"""`chronicle serve --role api` and `--role worker` apart, against one database: two API
processes and a worker process; a session created through one API process, answered
through the other, run by the worker — the processes meet only in PostgreSQL."""

from __future__ import annotations

import signal
import time
from typing import Any

import httpx

from tests.support.chronicle_server import start_server, start_worker
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_state(url: str, token: str, session: str, state: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        response = httpx.get(f"{url}/api/sessions/{session}", headers=bearer(token))
        if response.status_code == 200 and response.json()["state"] == state:
            return response.json()
        assert time.monotonic() < deadline, f"never {state}: {response.text}"
        time.sleep(0.3)


def test_api_and_worker_processes_apart_on_one_database(
    database_env: dict[str, str], fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(
        Reply(content="Which file name?"),
        Reply(tool_calls=[tool_call("execute_bash", command="echo hi > named.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    env = {**database_env, "CHRONICLE_LLM_BASE_URL": fake_llm.base_url}
    first, second = start_server(env, "--role", "api"), start_server(env, "--role", "api")
    worker = start_worker(env)
    try:
        token = first.token("omar")
        created = httpx.post(
            f"{first.url}/api/sessions", headers=bearer(token), json={"task": "write a file"}
        )
        assert created.status_code == 201, created.text
        session = created.json()["id"]
        # the worker ran it (no API process runs agents); the other API process sees it
        wait_state(second.url, token, session, "awaiting_user_input")
        answer = httpx.post(
            f"{second.url}/api/sessions/{session}/messages",
            headers=bearer(token),
            json={"content": "named.txt"},
        )
        assert answer.status_code == 202
        finished = wait_state(first.url, token, session, "finished")
        assert finished["model_calls"] == 3
        admin = bearer(second.token("root", admin=True))
        ready = httpx.get(f"{second.url}/health/ready", headers=admin).json()
        workers = next(c for c in ready["checks"] if c["name"] == "workers")
        assert workers["ok"], ready
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
        for server in (first, second):
            assert server.stop() == 0
