"""A whole session through the API with the scripted model server: created over HTTP, run
by the workers of `chronicle serve` (never by the API), answered by the user over HTTP when
the agent asks, run again, finished — every user event carrying the user's name."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_state(server: ServerProcess, token: str, session: str, state: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        response = httpx.get(f"{server.url}/api/sessions/{session}", headers=bearer(token))
        if response.status_code == 200 and response.json()["state"] == state:
            return response.json()
        assert time.monotonic() < deadline, f"never {state}: {response.text}"
        time.sleep(0.3)


def test_a_session_runs_asks_the_user_and_finishes(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo hello > hello.txt")]),
        Reply(content="Done with the file. Should I also add a test?"),
        Reply(tool_calls=[tool_call("execute_bash", command="echo ok > test.txt")]),
        Reply(tool_calls=[tool_call("finish", message="both files written")]),
    )
    server = serve(llm_base_url=fake_llm.base_url)
    token = server.token("lena")
    created = httpx.post(
        f"{server.url}/api/sessions",
        headers=bearer(token),
        json={"task": "write hello.txt", "limits": {"max_iterations": 10}},
    )
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    workspace = Path(created.json()["workspace"])

    asked = wait_state(server, token, session, "awaiting_user_input")
    assert (workspace / "hello.txt").read_text() == "hello\n"
    assert asked["model_calls"] == 2

    answer = httpx.post(
        f"{server.url}/api/sessions/{session}/messages",
        headers=bearer(token),
        json={"content": "yes, add test.txt"},
    )
    assert answer.status_code == 202 and answer.json()["run_requested"]
    finished = wait_state(server, token, session, "finished")
    assert (workspace / "test.txt").read_text() == "ok\n"
    assert finished["model_calls"] == 4

    events = httpx.get(
        f"{server.url}/api/sessions/{session}/events?limit=1000", headers=bearer(token)
    ).json()["events"]
    users = [e["payload"].get("user") for e in events if e["source"] == "user"]
    assert users and all(user == "lena" for user in users)
    kinds = [e["kind"] for e in events]
    assert kinds.count("run") == 2 and kinds.count("run.output") == 2
    # the model saw the user's answer
    assert "yes, add test.txt" in str(fake_llm.requests[2]["messages"])
    report = httpx.get(f"{server.url}/api/sessions/{session}/verify", headers=bearer(token))
    assert report.json()["ok"] is True
