"""The gateway's limits, driven by the official ``openai`` and ``anthropic`` SDKs against a
real ``chronicle serve`` whose upstream is the fake model: a session's own limits (the
``X-Chronicle-Limits`` header) and a user's (``chronicle users limits``). Each refusal is in
the agent's protocol, one the SDK does not retry when a cap is spent (the SDKs keep their
default retries here, and each request is counted as it leaves the SDK), recorded in the
session as a refused ``llm.call`` costing 0, and never reaches the model; 32 concurrent calls
of one session never pass its call cap."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from tests.support.analyst_login import analyst_login
from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply
from tests.support.postgres import PgServer, database_from_template

MODEL_MAP = json.dumps({"gpt-*": "openai/scripted", "claude-*": "openai/scripted"})
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def gateway(
    pg_server: PgServer,
    pg_template: str,
    upstream: FakeLlmServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerProcess]:
    """One ``chronicle serve`` for the module, its model the fake one, priced."""
    root = tmp_path_factory.mktemp("limits")
    for admin_url in database_from_template(
        pg_server.admin, pg_template, f"gl_{uuid.uuid4().hex[:16]}"
    ):
        env = database_environment(
            pg_server, admin_url, root, gateway_model_map=MODEL_MAP,
            llm_input_cost_per_token="0.000001", llm_output_cost_per_token="0.000002",
        )  # fmt: skip
        env["CHRONICLE_LLM_BASE_URL"] = upstream.base_url
        with analyst_login(admin_url, pg_server.admin) as analyst:
            env["CHRONICLE_ANALYST_DATABASE_URL"] = analyst
            server = start_server(env)
            try:
                yield server
            finally:
                server.stop()


class Sent:
    """Counts the requests an SDK sends (its retries included), as httpx sends them."""

    def __init__(self) -> None:
        self.count = 0

    def hook(self, request: object) -> None:
        self.count += 1


def openai_sdk(gateway: ServerProcess, token: str, headers: dict[str, str], sent: Sent) -> Any:
    return openai.OpenAI(
        base_url=f"{gateway.url}/v1",
        api_key=token,
        default_headers=headers,
        http_client=httpx2.Client(event_hooks={"request": [sent.hook]}),
    )  # fmt: skip  (the SDK's default retries: 2)


def anthropic_sdk(gateway: ServerProcess, token: str, headers: dict[str, str], sent: Sent) -> Any:
    return anthropic.Anthropic(
        base_url=gateway.url, api_key=token, default_headers=headers,
        http_client=httpx2.Client(event_hooks={"request": [sent.hook]}),
    )  # fmt: skip


def calls(gateway: ServerProcess, token: str, session: str) -> list[dict[str, Any]]:
    page = httpx.get(
        f"{gateway.url}/api/sessions/{session}/events",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert page.status_code == 200, page.text
    return [e["payload"] for e in page.json()["events"] if e["kind"] == "llm.call"]


def body_of(error: anthropic.APIStatusError) -> dict[str, Any]:
    assert isinstance(error.body, dict), error.body
    return error.body


def session_id(reply_headers: Any) -> str:
    return str(reply_headers["x-chronicle-session"])


def refused_call(payload: dict[str, Any], limit_words: str) -> None:
    assert payload["error_kind"] == "refused", payload
    assert limit_words in payload["error"]
    assert payload["attempts"] == 0 and payload["cost_usd"] == 0
    assert payload["prompt"] and payload["fingerprint"]  # what was refused, as any call


def set_limits(gateway: ServerProcess, user: str, *options: str) -> None:
    done = chronicle("users", "limits", user, *options, env=gateway.env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_session_call_cap_refuses_in_openais_shape_without_retries(
    gateway: ServerProcess, upstream: FakeLlmServer
) -> None:
    token = gateway.token("limits-calls")
    sent = Sent()
    headers = {"X-Chronicle-Session": "capped", "X-Chronicle-Limits": "max_calls=2"}
    sdk = openai_sdk(gateway, token, headers, sent)
    upstream.script(Reply(content="one"), Reply(content="two"))
    before = len(upstream.requests)
    first = sdk.chat.completions.with_raw_response.create(model="gpt-4o", messages=HELLO)
    session = session_id(first.headers)
    sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    for stream in (False, True):
        sent.count = 0
        with pytest.raises(openai.RateLimitError) as refused:
            sdk.chat.completions.create(model="gpt-4o", messages=HELLO, stream=stream)
        assert sent.count == 1  # a spent cap is not retried (x-should-retry: false)
        error = refused.value
        assert error.status_code == 429 and error.code == "insufficient_quota"
        assert error.type == "insufficient_quota"
        assert "max_calls 2" in error.message and "session's call cap" in error.message
        assert error.response.headers["x-should-retry"] == "false"
    assert len(upstream.requests) == before + 2  # the refused calls never reached the model
    recorded = calls(gateway, token, session)
    assert [c.get("error_kind") for c in recorded] == [None, None, "refused", "refused"]
    refused_call(recorded[2], "max_calls 2")
    assert recorded[3]["params"]["stream"] is True
    verified = chronicle("verify", session, env=gateway.env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    listed = chronicle(
        "sql", "--json",
        "SELECT error_type, cost_usd FROM llm_calls "
        f"WHERE session_id = '{session}' ORDER BY seq",
        env=gateway.env,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [row["error_type"] for row in rows] == [None, None, "refused", "refused"]
    assert [row["cost_usd"] for row in rows[2:]] == [0, 0]


def test_the_rate_limit_says_when_to_retry(gateway: ServerProcess, upstream: FakeLlmServer) -> None:
    token = gateway.token("limits-rate")
    headers = {"X-Chronicle-Session": "paced", "X-Chronicle-Limits": "rate=1"}
    sdk = openai_sdk(gateway, token, headers, Sent()).with_options(max_retries=0)
    upstream.script(Reply(content="now"))
    sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    with pytest.raises(openai.RateLimitError) as refused:
        sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    error = refused.value
    assert error.code == "rate_limit_exceeded" and "rate_per_minute 1" in error.message
    assert 55 <= int(error.response.headers["retry-after"]) <= 60
    assert "x-should-retry" not in error.response.headers  # retry later: the SDK may
    claude = anthropic_sdk(gateway, token, headers, Sent()).with_options(max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as limited:
        claude.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HELLO)
    assert body_of(limited.value)["error"]["type"] == "rate_limit_error"
    assert "retry-after" in limited.value.response.headers


def test_a_users_cost_cap_and_models_hold_in_anthropics_shape(
    gateway: ServerProcess, upstream: FakeLlmServer
) -> None:
    user = "limits-cost"
    token = gateway.token(user)
    set_limits(gateway, user, "--max-cost", "0.0001", "--models", "scripted,other-*")
    sent = Sent()
    sdk = anthropic_sdk(gateway, token, {"X-Chronicle-Session": "budget"}, sent)
    upstream.script(Reply(content="pricey", prompt_tokens=100, completion_tokens=20))
    before = len(upstream.requests)
    raw = sdk.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=10, messages=HELLO
    )
    session = session_id(raw.headers)  # $0.00014 spent: past the cap, by this call's own cost
    sent.count = 0
    with pytest.raises(anthropic.RateLimitError) as refused:
        sdk.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HELLO)
    assert sent.count == 1  # the SDK's two retries are not spent on a spent cap
    body = body_of(refused.value)
    assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert "user's cost cap" in body["error"]["message"]
    assert "max_cost_usd $0.0001" in body["error"]["message"]
    set_limits(gateway, user, "--max-cost", "none", "--models", "gpt-*")
    sent.count = 0
    with pytest.raises(anthropic.PermissionDeniedError) as denied:
        sdk.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HELLO)
    assert sent.count == 1
    denial = body_of(denied.value)["error"]
    assert denial["type"] == "permission_error"
    assert "'openai/scripted' is not allowed" in denial["message"] and "gpt-*" in denial["message"]
    assert len(upstream.requests) == before + 1
    recorded = calls(gateway, token, session)
    assert [c.get("error_kind") for c in recorded] == [None, "refused", "refused"]
    refused_call(recorded[1], "max_cost_usd")
    refused_call(recorded[2], "not allowed")
    shown = chronicle("users", "limits", user, env=gateway.env)
    assert "models     gpt-*" in shown.stdout and "used: 1 calls, $0.00014" in shown.stdout
    set_limits(gateway, user, "--models", "none", "--max-cost", "0.0001", "--reset")
    upstream.script(Reply(content="a new budget"))
    again = sdk.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HELLO)
    assert again.content[0].text == "a new budget"  # type: ignore[union-attr]


def test_a_session_cannot_loosen_its_users_cap(
    gateway: ServerProcess, upstream: FakeLlmServer
) -> None:
    user = "limits-tight"
    token = gateway.token(user)
    set_limits(gateway, user, "--max-calls", "1")
    headers = {"X-Chronicle-Session": "loose", "X-Chronicle-Limits": "max_calls=100"}
    sdk = openai_sdk(gateway, token, headers, Sent())
    upstream.script(Reply(content="only"))
    sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    with pytest.raises(openai.RateLimitError) as refused:
        sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    assert "user's call cap" in refused.value.message and "max_calls 1" in refused.value.message


def test_32_concurrent_calls_never_pass_the_call_cap(
    gateway: ServerProcess, upstream: FakeLlmServer
) -> None:
    token = gateway.token("limits-race")
    headers = {"X-Chronicle-Session": "raced", "X-Chronicle-Limits": "max_calls=10"}
    upstream.script(*(Reply(content=f"r{i}") for i in range(32)))
    before = len(upstream.requests)

    async def race() -> list[BaseException | Any]:
        sdk = openai.AsyncOpenAI(
            base_url=f"{gateway.url}/v1", api_key=token, default_headers=headers,
            http_client=httpx2.AsyncClient(limits=httpx2.Limits(max_connections=64)),
        )  # fmt: skip
        async with sdk:
            return await asyncio.gather(
                *(
                    sdk.chat.completions.create(
                        model="gpt-4o", messages=[{"role": "user", "content": f"call {i}"}]
                    )
                    for i in range(32)
                ),
                return_exceptions=True,
            )

    results = asyncio.run(race())
    answered = [r for r in results if not isinstance(r, BaseException)]
    refusals = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert (len(answered), len(refusals)) == (10, 22), results
    assert len(upstream.requests) == before + 10
    upstream.replies.clear()  # the 22 replies no call asked for


AGENT = """
import openai
client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from chronicle record
for question in ("first?", "second?"):
    try:
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": question}]
        )
        print(reply.choices[0].message.content)
    except openai.RateLimitError as exc:
        print("refused:", exc.code)
"""


def test_chronicle_record_gives_a_new_session_its_limits(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    gateway.token("limits-record")
    (tmp_path / "agent.py").write_text(AGENT)
    upstream.script(Reply(content="answered"))
    options = ["--user", "limits-record", "--url", gateway.url, "--workspace", str(tmp_path)]
    result = chronicle(
        "record", *options, "--max-calls", "1", "--", sys.executable, "agent.py",
        env=gateway.env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "answered\nrefused: insufficient_quota\n"
    again = chronicle(
        "record", *options, "--session", "named", "--max-cost", "1", "--", sys.executable, "-V",
        env=gateway.env, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr  # a name's first use opens it: limits taken
    refused = chronicle(
        "record", *options, "--session", "named", "--max-cost", "1", "--", sys.executable, "-V",
        env=gateway.env, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 1 and "limits were set when it was opened" in refused.stderr
