"""Replays and forks started over HTTP and run by the workers of a real `chronicle serve` (the
scripted model server answers the live runs): a replay with no override matches with 0 model
calls, one with another system prompt diverges at the first call's system message, a fork at a
seq restores the workspace, re-executes the copied command and goes on live with the model
(with the model and overrides it is given; a replay's fork with the replay's); the model-call
route shows what the export holds; another user gets 404 and bad input a 422 problem document;
a finished session refuses pause, stop and resume with 409 and its replay still matches."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def until_listed(server: ServerProcess, token: str, session: str, *states: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        response = httpx.get(f"{server.url}/api/sessions/{session}", headers=bearer(token))
        if response.status_code == 200 and response.json()["state"] in states:
            return response.json()
        assert time.monotonic() < deadline, f"never {states}: {response.text}"
        time.sleep(0.3)


def replay_status(server: ServerProcess, token: str, replay: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        response = httpx.get(
            f"{server.url}/api/sessions/{replay}/replay-result", headers=bearer(token)
        )
        assert response.status_code == 200, response.text
        if response.json()["state"] != "running":
            return response.json()
        assert time.monotonic() < deadline, "the replay never ended"
        time.sleep(0.3)


def events_of(server: ServerProcess, token: str, session: str) -> list[dict[str, Any]]:
    page = httpx.get(
        f"{server.url}/api/sessions/{session}/events?limit=1000", headers=bearer(token)
    )
    assert page.status_code == 200, page.text
    return page.json()["events"]  # type: ignore[no-any-return]


@pytest.fixture
def recorded(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer
) -> tuple[ServerProcess, str, str]:
    """A server, lena's token, and her finished session (a command, then finish)."""
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo hello > hello.txt")]),
        Reply(tool_calls=[tool_call("finish", message="hello.txt written")]),
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
    until_listed(server, token, session, "finished")
    # the run's last event, the workspace's diff, is recorded just after its end state
    deadline = time.monotonic() + 60
    while "workspace.diff" not in [e["kind"] for e in events_of(server, token, session)]:
        assert time.monotonic() < deadline, "the run's workspace.diff never came"
        time.sleep(0.1)
    return server, token, session


def test_replays_match_or_diverge_and_are_sessions_of_the_user(
    recorded: tuple[ServerProcess, str, str], fake_llm: FakeLlmServer
) -> None:
    server, token, session = recorded
    calls_before = len(fake_llm.requests)
    # steering a finished session is refused and records nothing (issue 23, item 3): a stop
    # recorded here made the plain replay below end "stopped" where the recording "finished"
    last_seq = len(events_of(server, token, session))
    for steering in ("stop", "pause", "resume"):
        refused = httpx.post(
            f"{server.url}/api/sessions/{session}/{steering}", headers=bearer(token)
        )
        assert refused.status_code == 409, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["detail"].startswith(
            f"session {session} is finished; {steering} applies only to a "
        ), refused.text
    assert "send it a message to continue it" in refused.json()["detail"]
    assert len(events_of(server, token, session)) == last_seq
    summary = httpx.get(f"{server.url}/api/sessions/{session}", headers=bearer(token)).json()
    assert summary["state"] == "finished" and summary["steering"] == []

    started = httpx.post(
        f"{server.url}/api/sessions/{session}/replays", headers=bearer(token), json={}
    )
    assert started.status_code == 202, started.text
    assert started.json()["replay_of"] == session and started.json()["user"] == "lena"
    same = replay_status(server, token, started.json()["id"])
    assert same["state"] == "finished", same
    result = same["result"]
    assert result["matched"] is True and result["divergence"] is None
    assert result["model_calls"] == 0 and result["steps_matched"] == result["steps_recorded"] == 2

    changed = httpx.post(
        f"{server.url}/api/sessions/{session}/replays",
        headers=bearer(token),
        json={"mode": "strict", "overrides": {"system_prompt": "You are a terse agent."}},
    )
    assert changed.status_code == 202, changed.text
    replay = changed.json()["id"]
    diverged = replay_status(server, token, replay)["result"]
    assert diverged["matched"] is False
    assert diverged["divergence"]["kind"] == "request"
    assert diverged["divergence"]["step"] == 1
    assert diverged["divergence"]["message"]["index"] == 0
    assert diverged["divergence"]["message"]["new_role"] == "system"
    assert "+You are a terse agent." in diverged["divergence"]["message"]["diff"]
    assert len(fake_llm.requests) == calls_before  # no model was asked, by either replay

    # the replay is a session like any: lena's, listed, its events paged, recorded as the CLI
    # records one
    events = events_of(server, token, replay)
    created = events[0]["payload"]
    assert created["replay_of"] == session and created["user"] == "lena"
    assert created["config"]["replay_mode"] == "strict"
    assert created["config"]["agent_config"]["system_prompt"] == "You are a terse agent."
    assert events[-1]["kind"] == "replay.result"
    summary = httpx.get(f"{server.url}/api/sessions/{replay}", headers=bearer(token))
    assert summary.status_code in (200, 404)  # listed once the projection applied it
    verify = httpx.get(f"{server.url}/api/sessions/{replay}/verify", headers=bearer(token))
    assert verify.json()["ok"] is True


def test_a_replay_that_diverges_forks_there_when_asked(
    recorded: tuple[ServerProcess, str, str], fake_llm: FakeLlmServer
) -> None:
    server, token, session = recorded
    prompt = "You are a careful agent. Say what you will do first."
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done my way")]))
    calls_before = len(fake_llm.requests)
    started = httpx.post(
        f"{server.url}/api/sessions/{session}/replays",
        headers=bearer(token),
        json={"on_divergence": "fork", "overrides": {"system_prompt": prompt}},
    )
    assert started.status_code == 202, started.text
    replay = started.json()["id"]
    deadline = time.monotonic() + 120
    while (status := replay_status(server, token, replay))["fork_id"] is None:
        assert time.monotonic() < deadline, status
        time.sleep(0.3)
    assert status["result"]["divergence"]["kind"] == "request"
    fork = status["fork_id"]
    until_listed(server, token, fork, "finished")
    events = events_of(server, token, fork)
    created = events[0]["payload"]
    assert created["forked_from"] == session
    assert created["config"]["agent_config"]["system_prompt"] == prompt
    # forked before the first model call (where it diverged), then live with the new prompt
    assert not [e for e in events if e["kind"] == "llm.call" and e["payload"].get("replayed_from")]
    assert len(fake_llm.requests) == calls_before + 1
    assert fake_llm.requests[calls_before]["messages"][0]["content"] == prompt
    assert httpx.get(f"{server.url}/api/sessions/{fork}", headers=bearer(token)).status_code == 200
    mallory = server.token("mallory")
    assert (
        httpx.get(f"{server.url}/api/sessions/{fork}", headers=bearer(mallory)).status_code == 404
    )


def test_a_fork_restores_reexecutes_and_continues_live(
    recorded: tuple[ServerProcess, str, str], fake_llm: FakeLlmServer
) -> None:
    server, token, session = recorded
    source = events_of(server, token, session)
    output = next(e for e in source if e["kind"] == "run.output")
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="cat hello.txt > copy.txt")]),
        Reply(tool_calls=[tool_call("finish", message="copied")]),
    )
    calls_before = len(fake_llm.requests)
    forked = httpx.post(
        f"{server.url}/api/sessions/{session}/forks",
        headers=bearer(token),
        json={"at_seq": output["seq"], "message": "now copy it to copy.txt"},
    )
    assert forked.status_code == 202, forked.text
    fork = forked.json()["id"]
    assert forked.json()["forked_from"] == session and forked.json()["user"] == "lena"
    until_listed(server, token, fork, "finished")

    events = events_of(server, token, fork)
    copied = [e for e in events if e["payload"].get("replayed_from") is not None]
    assert [e["seq"] for e in copied] == list(range(1, output["seq"] + 1))
    assert events[0]["payload"]["forked_from"] == session
    assert not [e for e in events if e["kind"] == "environment.divergence"]
    message = next(e for e in events if e["kind"] == "message" and e["seq"] > output["seq"])
    assert message["payload"]["user"] == "lena"
    workspace = Path(events[0]["payload"]["config"]["workspace"])
    # restored and re-executed (hello.txt), then the live run's command (copy.txt)
    assert (workspace / "copy.txt").read_text() == "hello\n"
    assert len(fake_llm.requests) == calls_before + 2
    assert "now copy it to copy.txt" in str(fake_llm.requests[calls_before]["messages"])


def test_a_fork_runs_with_its_model_and_overrides_and_a_replays_fork_keeps_its_prompt(
    recorded: tuple[ServerProcess, str, str], fake_llm: FakeLlmServer
) -> None:
    server, token, session = recorded
    output = next(e for e in events_of(server, token, session) if e["kind"] == "run.output")
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done")]))
    calls_before = len(fake_llm.requests)
    overrides = {
        "system_prompt": "You are a forked agent.",
        "tools": ["execute_bash", "finish"],
        "max_iterations": 7,
        "model_params": {"temperature": 0.3, "max_tokens": 300},
    }
    forked = httpx.post(
        f"{server.url}/api/sessions/{session}/forks",
        headers=bearer(token),
        json={"at_seq": output["seq"], "model": "openai/forked-model", "overrides": overrides},
    )
    assert forked.status_code == 202, forked.text
    fork = forked.json()["id"]
    summary = until_listed(server, token, fork, "finished")
    assert summary["forked_from"] == session and summary["forked_at"] == output["seq"]
    config = events_of(server, token, fork)[0]["payload"]["config"]
    assert config["model"] == "openai/forked-model"
    assert config["agent_config"]["system_prompt"] == "You are a forked agent."
    assert config["agent_config"]["model_params"] == {"temperature": 0.3, "max_tokens": 300}
    assert config["tools"] == ["execute_bash", "finish"] and config["max_iterations"] == 7
    sent = fake_llm.requests[calls_before]
    assert sent["model"] == "forked-model" and sent["temperature"] == 0.3
    assert sent["messages"][0]["content"] == "You are a forked agent."
    assert [t["function"]["name"] for t in sent["tools"]] == ["execute_bash", "finish"]

    # a replay with another prompt, forked after its task: the fork goes on with that prompt
    prompt = "You are a replayed agent."
    started = httpx.post(
        f"{server.url}/api/sessions/{session}/replays",
        headers=bearer(token),
        json={"overrides": {"system_prompt": prompt, "model_params": {"temperature": 0.5}}},
    )
    replay = started.json()["id"]
    assert replay_status(server, token, replay)["result"]["divergence"] is not None
    task = next(e for e in events_of(server, token, replay) if e["kind"] == "message")
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done again")]))
    calls_before = len(fake_llm.requests)
    forked = httpx.post(
        f"{server.url}/api/sessions/{replay}/forks",
        headers=bearer(token),
        json={"at_seq": task["seq"]},
    )
    assert forked.status_code == 202, forked.text
    fork = forked.json()["id"]
    summary = until_listed(server, token, fork, "finished")
    # a live session (no replay), forked from the replay, with the replay's overrides
    assert summary["replay_of"] is None and summary["forked_from"] == replay
    created = events_of(server, token, fork)[0]["payload"]
    assert created.get("replay_of") is None and "replay_mode" not in created["config"]
    assert created["config"]["agent_config"]["system_prompt"] == prompt
    sent = fake_llm.requests[calls_before]
    assert sent["messages"][0]["content"] == prompt and sent["temperature"] == 0.5


def test_the_model_call_route_shows_what_the_export_holds(
    recorded: tuple[ServerProcess, str, str], fake_llm: FakeLlmServer
) -> None:
    server, token, session = recorded
    exported = httpx.get(f"{server.url}/api/sessions/{session}/export", headers=bearer(token))
    lines = [json.loads(line) for line in exported.text.splitlines()]
    messages = {line["hash"]: line["message"] for line in lines if line.get("type") == "message"}
    calls = [e for e in events_of(server, token, session) if e["kind"] == "llm.call"]
    assert len(calls) == 2
    for number, call in enumerate(calls):
        response = httpx.get(
            f"{server.url}/api/sessions/{session}/model-calls/{call['seq']}",
            headers=bearer(token),
        )
        assert response.status_code == 200, response.text
        shown = response.json()
        assert shown["messages"] == [messages[key] for key in shown["message_hashes"]]
        # the whole prompt, as the model got it (the second call's delta lists fewer)
        sent = fake_llm.requests[number]["messages"]
        assert [m["role"] for m in shown["messages"]] == [m["role"] for m in sent]
        assert [m.get("content") for m in shown["messages"]] == [m.get("content") for m in sent]
        assert [t["function"]["name"] for t in shown["tools"]] == [
            t["function"]["name"] for t in fake_llm.requests[number]["tools"]
        ]
        assert shown["response"] == call["payload"]["response"]
        assert shown["usage"] == call["payload"]["usage"]
        assert shown["attempts"] == 1 and shown["model"] == call["payload"]["model"]
    not_a_call = httpx.get(
        f"{server.url}/api/sessions/{session}/model-calls/1", headers=bearer(token)
    )
    assert not_a_call.status_code == 404
    assert not_a_call.headers["content-type"] == "application/problem+json"


def test_another_user_gets_404_and_bad_input_a_problem(
    recorded: tuple[ServerProcess, str, str],
) -> None:
    server, token, session = recorded
    mallory = server.token("mallory")
    calls = [
        ("POST", f"/api/sessions/{session}/replays", {}),
        ("POST", f"/api/sessions/{session}/forks", {"at_seq": 3}),
        ("GET", f"/api/sessions/{session}/model-calls/4", None),
    ]
    for method, path, body in calls:
        response = httpx.request(method, server.url + path, headers=bearer(mallory), json=body)
        assert response.status_code == 404, (path, response.text)
        assert response.headers["content-type"] == "application/problem+json"
    replay = httpx.post(
        f"{server.url}/api/sessions/{session}/replays", headers=bearer(token), json={}
    ).json()["id"]
    theirs = httpx.get(f"{server.url}/api/sessions/{replay}/replay-result", headers=bearer(mallory))
    assert theirs.status_code == 404
    not_a_replay = httpx.get(
        f"{server.url}/api/sessions/{session}/replay-result", headers=bearer(token)
    )
    assert not_a_replay.status_code == 404

    last = events_of(server, token, session)[-1]["seq"]
    cut = next(e for e in events_of(server, token, session) if e["kind"] == "run.output")["seq"]
    # the body's shape is checked by Litestar (400, as on every route); what only the
    # recording can tell is a 422
    bad = [
        ("replays", {"mode": "fast"}, 400, "mode"),
        ("replays", {"overrides": {"temperature": 1}}, 400, "temperature"),
        ("replays", {"on_divergence": "explode"}, 400, "on_divergence"),
        ("forks", {"at_seq": 1}, 400, "at_seq"),
        ("forks", {}, 400, "at_seq"),
        ("replays", {"overrides": {"tools": ["rm_rf"]}}, 422, "rm_rf"),
        ("replays", {"overrides": {"model_params": {"top_k": 3}}}, 422, "top_k"),
        ("replays", {"overrides": {"agent": "nobody"}}, 422, "nobody"),
        ("forks", {"at_seq": last + 5}, 422, f"between 2 and {last}"),
        (
            "forks",
            {"at_seq": cut, "overrides": {"tools": ["rm_rf"]}},
            422,
            "there is no tool rm_rf",
        ),
        ("forks", {"at_seq": cut, "overrides": {"model_params": {"top_k": 3}}}, 422, "top_k"),
        ("forks", {"at_seq": cut, "overrides": {"agent": "nobody"}}, 422, "nobody"),
        ("forks", {"at_seq": cut, "overrides": {"max_iterations": 0}}, 400, "max_iterations"),
        ("forks", {"at_seq": cut, "model": "nowhere-provider/x"}, 422, "nowhere-provider/x"),
    ]
    for route, body, status, said in bad:
        response = httpx.post(
            f"{server.url}/api/sessions/{session}/{route}", headers=bearer(token), json=body
        )
        assert response.status_code == status, (route, body, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert said in response.text, (body, response.text)
