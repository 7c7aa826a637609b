"""The playground through the API of a real ``chronicle serve`` whose model is the fake one: a
recorded call sent again with an edited system prompt is recorded as a session of its own
(hash chain verified, linked to the call, listed under the original session); only the
session's owner or an admin may run its call, and they own the run; a model's failure and odd
replies (a 401 upstream, no choices, token counts no reader can hold) are recorded and shown
as what they are; a request that cannot be sent is refused before anything is recorded."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.fake_llm import FakeLlmServer, Reply
from tests.support.postgres import PgServer, database_from_template

SYSTEM = "Answer in one word."
NEW_SYSTEM = "Answer in three words."
PROMPT = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Capital of France?"},
]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeLlmServer]:
    server = FakeLlmServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server(
    pg_server: PgServer,
    pg_template: str,
    upstream: FakeLlmServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("playground")
    for admin_url in database_from_template(
        pg_server.admin, pg_template, f"pg_{uuid.uuid4().hex[:16]}"
    ):
        env = database_environment(
            pg_server, admin_url, root,
            llm_input_cost_per_token="0.000001", llm_output_cost_per_token="0.000002",
        )  # fmt: skip
        env["CHRONICLE_LLM_BASE_URL"] = upstream.base_url
        started = start_server(env)
        try:
            yield started
        finally:
            started.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def recorded_call(server: ServerProcess, upstream: FakeLlmServer, token: str) -> tuple[str, int]:
    """A call made through the model gateway: its session and seq (replies an earlier test
    scripted and never used are dropped first)."""
    upstream.replies.clear()
    upstream.script(Reply(content="Paris.", prompt_tokens=12, completion_tokens=3))
    made = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**bearer(token), "X-Chronicle-Session": f"original {uuid.uuid4()}"},
        json={"model": "scripted", "messages": PROMPT, "temperature": 0},
        timeout=60,
    )
    assert made.status_code == 200, made.text
    session = made.headers["x-chronicle-session"]
    events = httpx.get(f"{server.url}/api/sessions/{session}/events", headers=bearer(token))
    seqs = [e["seq"] for e in events.json()["events"] if e["kind"] == "llm.call"]
    assert len(seqs) == 1
    return session, seqs[0]


def playground(
    server: ServerProcess, token: str, session: str, seq: int, **body: Any
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/api/sessions/{session}/model-calls/{seq}/playground",
        headers={**bearer(token), "Content-Type": "application/json"},
        content=json.dumps(body),  # a lone surrogate as its escape, as JSON allows
        timeout=60,
    )


def runs(server: ServerProcess, token: str, session: str, query: str = "") -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/sessions/{session}/playground-runs{query}", headers=bearer(token)
    )


def test_an_edited_call_is_a_verified_session_linked_to_its_call(
    server: ServerProcess, upstream: FakeLlmServer
) -> None:
    alice = server.token("alice")
    session, seq = recorded_call(server, upstream, alice)
    upstream.script(Reply(content="Paris, in France.", prompt_tokens=15, completion_tokens=5))
    edited = [{"role": "system", "content": NEW_SYSTEM}, PROMPT[1]]
    sent = playground(server, alice, session, seq, messages=edited, params={"temperature": 0.5})
    assert sent.status_code == 201, sent.text
    run = sent.json()
    # the model got the edit, and the run says what it answered and what it cost
    assert upstream.requests[-1]["messages"][0]["content"] == NEW_SYSTEM
    assert upstream.requests[-1]["temperature"] == 0.5
    assert run["response"]["content"] == "Paris, in France."
    assert (run["usage"]["prompt_tokens"], run["usage"]["completion_tokens"]) == (15, 5)
    assert run["cost_usd"] == pytest.approx(15 * 0.000001 + 5 * 0.000002)
    assert run["error"] is None and run["attempts"] == 1 and run["latency_ms"] > 0
    assert run["from_call"] == {
        "session": session,
        "seq": seq,
        "changes": ["message 0 (system) edited", "temperature: 0 → 0.5"],
    }
    new = run["session_id"]
    assert new != session

    # its own session: session.created (linked, no agent) then the llm.call, chain intact
    events = httpx.get(f"{server.url}/api/sessions/{new}/events", headers=bearer(alice)).json()
    kinds = [e["kind"] for e in events["events"]]
    assert kinds == ["session.created", "llm.call"]
    config = events["events"][0]["payload"]["config"]
    assert config["from_call"] == run["from_call"]
    assert (config["agent"], config["client"]) == ("external", "Chronicle-Playground")
    assert events["events"][1]["seq"] == run["seq"]
    verified = httpx.get(f"{server.url}/api/sessions/{new}/verify", headers=bearer(alice))
    assert verified.json()["ok"] is True, verified.text
    assert verified.json()["checked"] == 2
    # the page's model-call view reads it like any call
    view = httpx.get(
        f"{server.url}/api/sessions/{new}/model-calls/{run['seq']}", headers=bearer(alice)
    ).json()
    assert view["messages"][0]["content"] == NEW_SYSTEM

    # the original session lists it, under its call
    listed = runs(server, alice, session).json()["runs"]
    assert [r["session_id"] for r in listed] == [new]
    assert listed[0]["from_call"]["seq"] == seq and listed[0]["model"] == "openai/scripted"
    assert runs(server, alice, session, f"?seq={seq}").json()["runs"] == listed
    assert runs(server, alice, session, f"?seq={seq + 1}").json()["runs"] == []


def test_only_the_owner_or_an_admin_runs_a_call_and_owns_the_run(
    server: ServerProcess, upstream: FakeLlmServer
) -> None:
    alice = server.token("alice")
    mallory = server.token("mallory")
    admin = server.token("root", admin=True)
    session, seq = recorded_call(server, upstream, alice)
    asked = len(upstream.requests)

    refused = playground(server, mallory, session, seq)
    assert refused.status_code == 404, refused.text
    assert "not yours" in refused.json()["detail"]
    assert runs(server, mallory, session).status_code == 404
    assert len(upstream.requests) == asked  # no model was called for mallory

    upstream.script(Reply(content="Paris (admin)."))
    by_admin = playground(server, admin, session, seq, model="openai/scripted")
    assert by_admin.status_code == 201, by_admin.text
    run = by_admin.json()["session_id"]
    assert by_admin.json()["from_call"]["changes"] == []  # sent again as recorded
    # the admin owns the run: alice does not see it, on its own or under her session
    assert httpx.get(f"{server.url}/api/sessions/{run}", headers=bearer(alice)).status_code == 404
    assert runs(server, alice, session).json()["runs"] == []
    assert [r["session_id"] for r in runs(server, admin, session).json()["runs"]] == [run]


def test_a_model_failure_and_odd_replies_are_recorded_and_shown_as_they_are(
    server: ServerProcess, upstream: FakeLlmServer
) -> None:
    alice = server.token("alice")
    session, seq = recorded_call(server, upstream, alice)

    upstream.key = "sk-the-right-one"  # the server's key is refused upstream: a 401
    try:
        failed = playground(server, alice, session, seq)
    finally:
        upstream.key = None
    assert failed.status_code == 201, failed.text
    assert failed.json()["error_kind"] == "auth"
    assert "Incorrect API key" in failed.json()["error"]
    assert failed.json()["response"]["content"] is None
    failed_session = failed.json()["session_id"]
    verified = httpx.get(
        f"{server.url}/api/sessions/{failed_session}/verify", headers=bearer(alice)
    )
    assert verified.json()["ok"] is True

    upstream.script(
        Reply(body='{"id": "x", "object": "chat.completion", "created": 1, "model": "m", '
                   '"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 0}}')
    )  # fmt: skip
    empty = playground(server, alice, session, seq).json()
    assert empty["error_kind"] == "bad_response" and empty["error"], empty

    upstream.script(
        Reply(
            content="huge",
            usage_json='{"prompt_tokens": 1e999, "completion_tokens": 100000000000000000000000, '
            '"total_tokens": -4}',
        )
    )
    huge = playground(server, alice, session, seq).json()
    assert huge["response"]["content"] == "huge" and huge["error"] is None
    # counts no reader holds exactly are unknown, and so is the cost that rests on them
    assert huge["usage"]["prompt_tokens"] is None
    assert huge["usage"]["completion_tokens"] is None
    assert huge["cost_usd"] is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"model": "no-provider-knows-this-model"}, "no-provider-knows-this-model"),
        ({"params": {"stream": True}}, "may not set stream"),
        ({"params": {"n": 2}}, "n must be 1"),
        ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "name"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "role"),
        ({"messages": []}, "messages"),
    ],
)
def test_a_request_that_cannot_be_sent_records_nothing(
    server: ServerProcess, upstream: FakeLlmServer, body: dict[str, Any], says: str
) -> None:
    alice = server.token("alice")
    session, seq = recorded_call(server, upstream, alice)
    asked = len(upstream.requests)
    refused = playground(server, alice, session, seq, **body)
    assert refused.status_code in (400, 422), refused.text
    assert says in refused.text
    assert len(upstream.requests) == asked
    assert runs(server, alice, session).json()["runs"] == []


@pytest.mark.parametrize(
    "body",
    [
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "x"}]}
            ]
        },
        {"messages": [{"role": "tool", "content": "an answer to no call"}]},
        {"messages": [{"role": "user", "content": "a NUL \u0000 and a lone \ud800 half"}]},
        {"params": {"temperature": "hot", "max_tokens": -5, "extra_body": {"deep": [1, {}]}}},
    ],
)
def test_odd_requests_are_sent_or_refused_never_a_server_error(
    server: ServerProcess, upstream: FakeLlmServer, body: dict[str, Any]
) -> None:
    alice = server.token("alice")
    session, seq = recorded_call(server, upstream, alice)
    upstream.script(Reply(content="odd, but answered"))
    sent = playground(server, alice, session, seq, **body)
    assert sent.status_code in (201, 422), sent.text
    if sent.status_code == 201:
        new = sent.json()["session_id"]
        verified = httpx.get(f"{server.url}/api/sessions/{new}/verify", headers=bearer(alice))
        assert verified.json()["ok"] is True, verified.text


def test_parameters_cannot_steer_litellm(server: ServerProcess, upstream: FakeLlmServer) -> None:
    """``api_base`` and the like go to the model in the request's JSON, never to litellm."""
    alice = server.token("alice")
    session, seq = recorded_call(server, upstream, alice)
    upstream.script(Reply(content="answered by the configured model"))
    sent = playground(
        server, alice, session, seq, params={"api_base": "http://127.0.0.1:9/v1", "seed": 3}
    )
    assert sent.status_code == 201, sent.text
    assert sent.json()["response"]["content"] == "answered by the configured model"
    assert upstream.requests[-1]["api_base"] == "http://127.0.0.1:9/v1"
    assert upstream.requests[-1]["seed"] == 3
