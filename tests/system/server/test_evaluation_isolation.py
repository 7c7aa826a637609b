"""Nobody reads another user's evaluation runs: every route of the OpenAPI document that names
a run answers another user 404 (as for a run that does not exist), and their list shows none
of it; a run started from the command line (no owner) is an admin's only; an admin reads
every run.

Before the runs had owners, every run route was admin-only: the owner's 200s below would have
failed; a route that forgot the owner check would answer mallory 200 and fail here."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import pytest

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import AgentState, EvalScore, Event, Finish, LlmCall, Message, SessionCreated
from app.events.masking import SecretMasker
from app.store import EventStore
from tests.support.chronicle_server import ServerProcess

SECRET = "alice-payroll-audit"
CLI_RUN = "nightly-from-cron"
SUITE = {"name": "private", "tasks": [{"id": "payroll", "prompt": "audit payroll.py"}]}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def run_routes(server: ServerProcess) -> list[str]:
    """Every GET path of the OpenAPI document that reads a run (by name, or two by query)."""
    schema = httpx.get(f"{server.url}/schema/openapi.json").json()
    return [
        path
        for path, operations in schema["paths"].items()
        if path.startswith("/api/evaluations/") and "get" in operations
    ]


def call(server: ServerProcess, token: str, path: str, run: str) -> httpx.Response:
    params = {"a": run, "b": run} if path.endswith("/compare") else None
    return httpx.get(
        server.url + path.replace("{run}", run), params=params, headers=bearer(token), timeout=30
    )


async def record_cli_run(url: str) -> None:
    """A finished, scored session of a run `chronicle eval run` made (it has no owner)."""
    events: list[Event] = [
        SessionCreated(config=evaluation_config(CLI_RUN, Task(id="t", prompt="p"), 1)),
        Message(content="p"),
        LlmCall(model="m", fingerprint="f", cost_usd=0.5),
        Finish(message="done", cause=3),
        AgentState(state="finished"),
    ]
    events.append(
        EvalScore(name="finished", scorer_version=1, score_label="pass", score_value=1.0,
                  explanation="e", scored_seq=len(events), evaluation_run=CLI_RUN)
    )  # fmt: skip
    async with await EventStore.open(url, masker=SecretMasker({})) as store:
        await store.append(uuid.uuid4(), events, expected_seq=0)


@pytest.fixture(scope="module")
def alice(shared_server: ServerProcess) -> str:
    """Alice's token; her run has ended (stopped at its trial: no model listens), and a
    command-line run is recorded beside it."""
    token = shared_server.token("alice")
    started = httpx.post(
        f"{shared_server.url}/api/evaluations",
        headers=bearer(token),
        json={"name": SECRET, "suite": SUITE},
    )
    assert started.status_code == 202, started.text
    asyncio.run(record_cli_run(shared_server.env["CHRONICLE_DATABASE_URL"]))
    deadline = time.monotonic() + 120
    while True:
        got = httpx.get(f"{shared_server.url}/api/evaluations/{SECRET}", headers=bearer(token))
        if got.status_code == 200 and got.json()["status"] == "stopped":
            return token
        assert time.monotonic() < deadline, got.text
        time.sleep(0.3)


def test_another_user_gets_404_on_every_run_route(shared_server: ServerProcess, alice: str) -> None:
    mallory = shared_server.token("mallory")
    routes = run_routes(shared_server)
    assert {"/api/evaluations/{run}", "/api/evaluations/{run}/report",
            "/api/evaluations/compare"} <= set(routes)  # fmt: skip
    for path in routes:
        for run in (SECRET, CLI_RUN, "no-such-run"):
            answer = call(shared_server, mallory, path, run)
            assert answer.status_code == 404, (path, run, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
            assert "payroll" not in answer.text.replace(SECRET, "")
    listed = httpx.get(f"{shared_server.url}/api/evaluations", headers=bearer(mallory))
    assert listed.status_code == 200 and listed.json()["runs"] == []


def test_the_owner_reads_her_run_and_not_a_command_line_one(
    shared_server: ServerProcess, alice: str
) -> None:
    for path in run_routes(shared_server):
        assert call(shared_server, alice, path, SECRET).status_code == 200, path
        assert call(shared_server, alice, path, CLI_RUN).status_code == 404, path
    listed = httpx.get(f"{shared_server.url}/api/evaluations", headers=bearer(alice)).json()
    assert [(run["name"], run["user"]) for run in listed["runs"]] == [(SECRET, "alice")]


def test_an_admin_reads_every_run(shared_server: ServerProcess, alice: str) -> None:
    admin = shared_server.token("root", admin=True)
    for path in run_routes(shared_server):
        for run in (SECRET, CLI_RUN):
            assert call(shared_server, admin, path, run).status_code == 200, (path, run)
    listed = httpx.get(f"{shared_server.url}/api/evaluations", headers=bearer(admin)).json()
    users = {run["name"]: run["user"] for run in listed["runs"]}
    assert users == {SECRET: "alice", CLI_RUN: None}
    cli = next(run for run in listed["runs"] if run["name"] == CLI_RUN)
    assert (cli["status"], cli["total"], cli["done"], cli["passed"]) == ("finished", 1, 1, 1)
