"""The model gateway's OpenAI protocol, driven by the official ``openai`` SDK (sync, async,
streamed, tool calls) against a real ``chronicle serve`` whose upstream is the fake model, with
a Chronicle token as the SDK's API key; then what the session's log holds (the REST API, the
page's model-call view, ``chronicle verify`` and the ``llm_calls`` view). Hostile input: a
model the deployment does not allow, a wrong key, NUL and lone surrogates in messages, a
10 MB request, a client that disconnects mid-stream."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.support.analyst_login import analyst_login
from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.postgres import PgServer, database_from_template

USER = "gw"
#: Every name an agent sends that starts with gpt- is answered by the fake model.
MODEL_MAP = json.dumps({"gpt-*": "openai/scripted"})
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "the weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def gateway(
    pg_server: PgServer,
    pg_template: str,
    upstream: FakeLlmServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerProcess]:
    """One ``chronicle serve`` for the module, its model the fake one."""
    root = tmp_path_factory.mktemp("gateway")
    for admin_url in database_from_template(
        pg_server.admin, pg_template, f"gw_{uuid.uuid4().hex[:16]}"
    ):
        env = database_environment(
            pg_server, admin_url, root, gateway_model_map=MODEL_MAP,
            llm_retries="1", llm_retry_min_wait="0", llm_retry_max_wait="0.1",
            llm_input_cost_per_token="0.000001", llm_output_cost_per_token="0.000002",
        )  # fmt: skip
        env["CHRONICLE_LLM_BASE_URL"] = upstream.base_url
        with analyst_login(admin_url, pg_server.admin) as analyst:
            env["CHRONICLE_ANALYST_DATABASE_URL"] = analyst  # for the llm_calls view
            server = start_server(env)
            try:
                yield server
            finally:
                server.stop()


@pytest.fixture(scope="module")
def token(gateway: ServerProcess) -> str:
    return gateway.token(USER)


def client(gateway: ServerProcess, token: str, session: str | None = None) -> openai.OpenAI:
    headers = {"X-Chronicle-Session": session} if session else None
    return openai.OpenAI(
        base_url=f"{gateway.url}/v1", api_key=token, default_headers=headers, max_retries=0
    )


def events(gateway: ServerProcess, token: str, session: str) -> list[dict[str, Any]]:
    page = httpx.get(
        f"{gateway.url}/api/sessions/{session}/events",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert page.status_code == 200, page.text
    found: list[dict[str, Any]] = page.json()["events"]
    return found


def calls(gateway: ServerProcess, token: str, session: str) -> list[dict[str, Any]]:
    return [e for e in events(gateway, token, session) if e["kind"] == "llm.call"]


def model_call(gateway: ServerProcess, token: str, session: str, seq: int) -> dict[str, Any]:
    view = httpx.get(
        f"{gateway.url}/api/sessions/{session}/model-calls/{seq}",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert view.status_code == 200, view.text
    found: dict[str, Any] = view.json()
    return found


def verified(gateway: ServerProcess, session: str) -> None:
    checked = chronicle("verify", session, env=gateway.env)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_sync_call_is_an_llm_call_of_an_external_session(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(Reply(content="Paris.", prompt_tokens=12, completion_tokens=3))
    raw = client(gateway, token, "sync run").chat.completions.with_raw_response.create(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "Capital of France?"},
        ],
        temperature=0.3,
        max_tokens=50,
        seed=7,
        extra_body={"top_k": 5},
    )
    reply = raw.parse()
    assert reply.choices[0].message.content == "Paris."
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 3)
    sent = upstream.requests[-1]
    assert sent["model"] == "scripted"  # the deployment's model, not the one named
    assert (sent["temperature"], sent["max_tokens"], sent["seed"], sent["top_k"]) == (
        0.3,
        50,
        7,
        5,
    )
    assert sent["_authorization"] == "Bearer sk-not-used"  # the server's key, not the token

    session = raw.headers["x-chronicle-session"]
    log = events(gateway, token, session)
    created = log[0]
    assert created["kind"] == "session.created"
    assert created["payload"]["title"] == "sync run"
    assert created["payload"]["config"]["agent"] == "external"
    assert created["payload"]["config"]["client"].startswith("OpenAI/Python")
    call = log[-1]
    assert call["kind"] == "llm.call"
    payload = call["payload"]
    assert payload["model"] == "openai/scripted"
    assert payload["params"]["temperature"] == 0.3 and payload["params"]["seed"] == 7
    assert payload["response"]["content"] == "Paris."
    assert payload["usage"]["prompt_tokens"] == 12 and payload["attempts"] == 1
    assert payload["cost_usd"] == pytest.approx(12 * 0.000001 + 3 * 0.000002)
    assert payload["latency_ms"] > 0
    view = model_call(gateway, token, session, call["seq"])
    assert [m["content"] for m in view["messages"]] == ["Answer in one word.", "Capital of France?"]
    verified(gateway, session)
    listed = chronicle(
        "sql", "--json",
        "SELECT gen_ai_request_model, gen_ai_request_temperature, gen_ai_usage_input_tokens "
        f"FROM llm_calls WHERE session_id = '{session}'",
        env=gateway.env,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [list(row.values()) for row in rows] == [["openai/scripted", 0.3, 12]]


def test_async_tool_calls_go_both_ways(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(
        Reply(tool_calls=[tool_call("weather", city="Oslo")]), Reply(content="It is cold.")
    )

    async def agent() -> tuple[Any, Any, str]:
        async with openai.AsyncOpenAI(
            base_url=f"{gateway.url}/v1",
            api_key=token,
            default_headers={"X-Chronicle-Session": "tools"},
            max_retries=0,
        ) as sdk:
            messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
            raw = await sdk.chat.completions.with_raw_response.create(
                model="gpt-4o-mini", messages=messages, tools=[WEATHER], tool_choice="auto"
            )
            first = raw.parse()
            asked = first.choices[0].message
            messages += [asked.model_dump(exclude_none=True)]
            messages += [
                {"role": "tool", "tool_call_id": asked.tool_calls[0].id, "content": "-5 C"}
            ]
            streamed = await sdk.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=[WEATHER], stream=True
            )
            second = "".join(
                [c.choices[0].delta.content or "" async for c in streamed if c.choices]
            )
            return first, second, raw.headers["x-chronicle-session"]

    first, second, session = asyncio.run(agent())
    asked = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls"
    assert (asked.function.name, json.loads(asked.function.arguments)) == (
        "weather",
        {"city": "Oslo"},
    )
    assert second == "It is cold."  # the second turn streamed
    assert upstream.requests[-2]["tools"][0]["function"]["name"] == "weather"
    assert upstream.requests[-2]["tool_choice"] == "auto"
    assert upstream.requests[-1]["messages"][-1]["content"] == "-5 C"
    recorded = calls(gateway, token, session)
    assert [c["payload"]["response"]["tool_calls"][:1] for c in recorded] == [
        [{"id": asked.id, "name": "weather", "arguments": asked.function.arguments}],
        [],
    ]
    view = model_call(gateway, token, session, recorded[-1]["seq"])
    assert view["tools"] == [WEATHER]
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool"]
    verified(gateway, session)


def test_a_stream_is_relayed_as_it_comes_and_recorded_whole(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(
        Reply(
            content="One, two, three.",
            stream_pieces=["One,", " two,", " three."],
            stream_held=True,
            prompt_tokens=30,
            completion_tokens=6,
        )
    )
    stream = client(gateway, token, "streams").chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Count to three."}],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces: list[str] = []
    usage = None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
            if pieces == ["One,"]:
                # the first piece came while the model still holds the rest: relayed as it came
                assert upstream.in_flight == 1
                upstream.release_held()
        if chunk.usage is not None:
            usage = chunk.usage
    assert "".join(pieces) == "One, two, three."
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (30, 6)
    session = stream.response.headers["x-chronicle-session"]
    payload = calls(gateway, token, session)[-1]["payload"]
    assert payload["response"]["content"] == "One, two, three."
    assert payload["response"]["finish_reason"] == "stop"
    assert payload["usage"]["prompt_tokens"] == 30 and payload["params"]["stream"] is True
    assert payload["error"] is None
    verified(gateway, session)


def test_streamed_tool_calls_add_up(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(Reply(tool_calls=[tool_call("weather", city="Lima")]))
    with client(gateway, token, "streams").chat.completions.stream(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Weather in Lima?"}],
        tools=[WEATHER],
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    asked = final.choices[0].message.tool_calls[0]
    assert (asked.function.name, json.loads(asked.function.arguments)) == (
        "weather",
        {"city": "Lima"},
    )
    listed = httpx.get(
        f"{gateway.url}/api/sessions", headers={"Authorization": f"Bearer {token}"}
    ).json()["sessions"]
    session = next(s["id"] for s in listed if s["title"] == "streams")
    payload = calls(gateway, token, session)[-1]["payload"]
    assert payload["response"]["tool_calls"] == [
        {"id": asked.id, "name": "weather", "arguments": asked.function.arguments}
    ]
    assert payload["response"]["finish_reason"] == "tool_calls"


def test_a_stream_the_model_refuses_is_answered_with_its_status_and_recorded(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(
        Reply(
            status=400,
            error="This model's maximum context length is 8192 tokens.",
            error_code="context_length_exceeded",
        )
    )
    with pytest.raises(openai.BadRequestError) as refused:
        client(gateway, token, "refusals").chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "long"}], stream=True
        )
    assert "maximum context length" in refused.value.message
    assert refused.value.code == "context_length_exceeded"
    listed = httpx.get(
        f"{gateway.url}/api/sessions", headers={"Authorization": f"Bearer {token}"}
    ).json()["sessions"]
    session = next(s["id"] for s in listed if s["title"] == "refusals")
    payload = calls(gateway, token, session)[-1]["payload"]
    assert payload["error_kind"] == "context_window"
    assert payload["params"]["stream"] is True


def test_a_failure_the_gateway_retries_is_one_call_of_two_attempts(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(Reply(status=503, error="overloaded"), Reply(content="second time"))
    raw = client(gateway, token, "retried").chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "again?"}]
    )
    assert raw.parse().choices[0].message.content == "second time"
    payload = calls(gateway, token, raw.headers["x-chronicle-session"])[-1]["payload"]
    assert (payload["attempts"], payload["error"]) == (2, None)


def test_a_tool_schema_that_is_not_json_schema_goes_to_the_model_as_sent(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(Reply(content="fine"))
    odd = [{"type": "function", "function": {"name": "x", "parameters": "not a schema"}}]
    answered = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {token}", "X-Chronicle-Session": "odd tools"},
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "tools": odd},
    )
    assert answered.status_code == 200, answered.text
    assert upstream.requests[-1]["tools"] == odd
    session = answered.headers["x-chronicle-session"]
    view = model_call(gateway, token, session, calls(gateway, token, session)[-1]["seq"])
    assert view["tools"] == odd


def test_the_models_are_listed(gateway: ServerProcess, token: str) -> None:
    names = [model.id for model in client(gateway, token).models.list()]
    assert names == ["scripted", "openai/scripted"]  # the pattern gpt-* is not a name


def test_a_model_not_allowed_is_refused_in_openais_shape(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    asked = len(upstream.requests)
    with pytest.raises(openai.NotFoundError) as refused:
        client(gateway, token, "refused").chat.completions.create(
            model="claude-opus", messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.code == "model_not_found"
    assert "claude-opus" in refused.value.message and "scripted" in refused.value.message
    assert len(upstream.requests) == asked  # never sent


def test_a_wrong_key_is_a_401_in_openais_shape(gateway: ServerProcess, token: str) -> None:
    with pytest.raises(openai.AuthenticationError) as refused:
        client(gateway, "chr_not-a-token").chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.code == "invalid_api_key"
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "authentication_error"
    # x-api-key, as Anthropic's SDKs send the key, is taken too (here: no body, so a 400)
    answered = httpx.post(
        f"{gateway.url}/v1/chat/completions", headers={"x-api-key": token}, content=b"[]"
    )
    assert answered.status_code == 400, answered.text
    assert answered.json()["error"]["type"] == "invalid_request_error"


def test_nul_and_lone_surrogates_travel_and_are_kept(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.script(Reply(content="ok"))
    body = (
        '{"model": "gpt-4o", "messages": [{"role": "user", '
        '"content": "nul \\u0000 and caf\\udce9 and pair \\ud83d\\ude00"}]}'
    )
    answered = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                 "X-Chronicle-Session": "odd text"},
        content=body.encode(),
    )  # fmt: skip
    assert answered.status_code == 200, answered.text
    sent = upstream.requests[-1]["messages"][0]["content"]
    assert sent == "nul \x00 and caf\\udce9 and pair \U0001f600"  # the surrogate escaped
    session = answered.headers["x-chronicle-session"]
    call = calls(gateway, token, session)[-1]
    view = model_call(gateway, token, session, call["seq"])
    assert view["messages"][0]["content"] == "nul \x00 and caf\udce9 and pair \U0001f600"
    verified(gateway, session)


def test_a_10_mb_request_is_a_413_in_openais_shape(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    asked = len(upstream.requests)
    with pytest.raises(openai.APIStatusError) as refused:
        client(gateway, token, "large").chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "x" * (10 * 1024 * 1024)}]
        )
    assert refused.value.status_code == 413
    assert refused.value.code == "request_too_large"
    assert "gateway_max_body_bytes" in refused.value.message
    assert len(upstream.requests) == asked


def test_a_client_gone_mid_stream_leaves_its_call_recorded_as_cut(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.hold()  # an earlier test let its held reply go
    upstream.script(
        Reply(content="never finished", stream_pieces=["never", " finished"], stream_held=True)
    )
    headers = {"Authorization": f"Bearer {token}", "X-Chronicle-Session": "cut"}
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "Say it slowly."}],
        "stream": True,
    }
    with httpx.stream(
        "POST", f"{gateway.url}/v1/chat/completions", headers=headers, json=body
    ) as response:
        assert response.status_code == 200
        session = response.headers["x-chronicle-session"]
        lines = response.iter_lines()
        first = next(line for line in lines if line.startswith("data: {") and "never" in line)
        assert json.loads(first.removeprefix("data: "))["choices"][0]["delta"]["content"] == (
            "never"
        )
    # the client has gone, the model still holds its reply: the call is recorded, cut
    recorded = wait_for_call(gateway, token, session)
    payload = recorded["payload"]
    assert payload["error_kind"] == "cut"
    assert payload["response"]["content"] == "never"
    assert "client disconnected" in payload["error"]
    upstream.release_held()
    asyncio.run(upstream.wait_until(lambda s: s.cut_streams == 1))  # upstream closed too
    verified(gateway, session)


def wait_for_call(gateway: ServerProcess, token: str, session: str) -> dict[str, Any]:
    """The session's first llm.call, once it is in the log (read through the live stream)."""
    with httpx.stream(
        "GET",
        f"{gateway.url}/api/sessions/{session}/stream",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    ) as stream:
        for line in stream.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line.removeprefix("data: "))
                if event.get("kind") == "llm.call":
                    found: dict[str, Any] = event
                    return found
    raise AssertionError("the stream ended without an llm.call")
