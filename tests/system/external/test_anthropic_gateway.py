"""``POST /v1/messages`` driven by the official anthropic SDK (sync, async, streamed with
``client.messages.stream``, a tool-use round trip) against a real ``chronicle serve`` whose
upstream is the fake model server: each call reaches the model as a chat completion and is
recorded as an ``llm.call`` of the session the SDK's ``X-Chronicle-Session`` header names."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import Message

from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.postgres import PgServer, database_from_template

MODEL = "claude-sonnet-4-5"
TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "Read a file of the workspace",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
]


@pytest.fixture(scope="module")
def gateway(
    pg_server: PgServer,
    pg_template: str,
    upstream: FakeLlmServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerProcess]:
    """A server that sends every claude-* model an agent names to the fake model."""
    root = tmp_path_factory.mktemp("anthropic-gateway")
    for admin_url in database_from_template(
        pg_server.admin, pg_template, f"anth_{uuid.uuid4().hex[:16]}"
    ):
        env = database_environment(pg_server, admin_url, root)
        env["CHRONICLE_LLM_BASE_URL"] = upstream.base_url
        env["CHRONICLE_GATEWAY_MODEL_MAP"] = '{"claude-*": "openai/scripted"}'
        server = start_server(env)
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="module")
def token(gateway: ServerProcess) -> str:
    return gateway.token("claude-user")


def client(gateway: ServerProcess, token: str, session: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=token,
        base_url=gateway.url,
        default_headers={"X-Chronicle-Session": session},
        max_retries=0,
    )


def llm_calls(gateway: ServerProcess, token: str, session: str) -> list[dict[str, Any]]:
    """The session's recorded model calls, read through the API."""
    headers = {"Authorization": f"Bearer {token}"}
    page = httpx.get(f"{gateway.url}/api/sessions/{session}/events", headers=headers)
    assert page.status_code == 200, page.text
    return [event["payload"] for event in page.json()["events"] if event["kind"] == "llm.call"]


def test_a_tool_use_round_trip_is_recorded_call_by_call(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    session = f"anthropic-{uuid.uuid4().hex[:8]}"
    sdk = client(gateway, token, session)
    upstream.script(
        Reply(content="Let me read it.", tool_calls=[tool_call("read_file", path="a.py")])
    )
    asked: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
    raw = sdk.messages.with_raw_response.create(
        model=MODEL, max_tokens=200, system="You are terse.", messages=asked, tools=TOOLS
    )
    first = raw.parse()
    session_id = raw.headers["x-chronicle-session"]
    assert first.stop_reason == "tool_use"
    assert first.content[0].type == "text" and first.content[0].text == "Let me read it."
    use = first.content[1]
    assert use.type == "tool_use" and use.name == "read_file" and use.input == {"path": "a.py"}
    assert (first.usage.input_tokens, first.usage.output_tokens) == (100, 20)

    sent = upstream.requests[-1]
    assert sent["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is in a.py?"},
    ]
    assert sent["tools"][0]["function"]["name"] == "read_file"
    assert sent["max_tokens"] == 200

    upstream.script(Reply(content="It sets x to 1."))
    second = sdk.messages.create(
        model=MODEL,
        max_tokens=200,
        system="You are terse.",
        tools=TOOLS,
        messages=[
            *asked,
            first.to_param(),
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "x = 1"}],
            },
        ],
    )
    assert second.stop_reason == "end_turn"
    assert [block.type for block in second.content] == ["text"]
    sent = upstream.requests[-1]
    assistant = sent["messages"][2]
    assert assistant["tool_calls"][0]["id"] == use.id
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": use.id, "content": "x = 1"}

    calls = llm_calls(gateway, token, session_id)
    assert len(calls) == 2
    assert [call["response"]["finish_reason"] for call in calls] == ["tool_calls", "stop"]
    assert calls[0]["response"]["tool_calls"][0]["name"] == "read_file"
    assert calls[0]["usage"]["prompt_tokens"] == 100
    assert calls[0]["params"]["max_tokens"] == 200
    assert calls[1]["response"]["content"] == "It sets x to 1."


def test_a_streamed_reply_reaches_the_sdk_whole_and_is_recorded(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    session = f"anthropic-stream-{uuid.uuid4().hex[:8]}"
    sdk = client(gateway, token, session)
    upstream.script(
        Reply(
            content="Reading the file now.",
            tool_calls=[tool_call("read_file", path="src/é.py")],
            prompt_tokens=70,
            completion_tokens=12,
            cached_tokens=30,
        )
    )
    with sdk.messages.stream(
        model=MODEL,
        max_tokens=100,
        messages=[{"role": "user", "content": "Read src/é.py"}],
        tools=TOOLS,
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
        session_id = stream.response.headers["x-chronicle-session"]
    assert text == "Reading the file now."
    assert upstream.requests[-1]["stream"] is True
    assert final.stop_reason == "tool_use"
    use = final.content[-1]
    assert use.type == "tool_use" and use.input == {"path": "src/é.py"}
    usage = final.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens) == (40, 12, 30)

    (call,) = llm_calls(gateway, token, session_id)
    assert call["response"]["content"] == "Reading the file now."
    assert call["response"]["tool_calls"][0]["arguments"] == '{"path": "src/\\u00e9.py"}'
    assert call["usage"]["prompt_tokens"] == 70

    # a model that fails before its first chunk: an HTTP error in Anthropic's shape
    upstream.script(Reply(status=503, error="the model is down"))
    with pytest.raises(anthropic.APIStatusError) as down:
        with sdk.messages.stream(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "again"}]
        ) as failed:
            failed.until_done()
    assert down.value.status_code == 503
    assert down.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


def test_the_async_client_and_its_errors(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    session = f"anthropic-async-{uuid.uuid4().hex[:8]}"

    async def talk() -> None:
        sdk = anthropic.AsyncAnthropic(
            api_key=token,
            base_url=gateway.url,
            default_headers={"X-Chronicle-Session": session},
            max_retries=0,
        )
        upstream.script(Reply(content="hello"))
        answer = await sdk.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        assert answer.content[0].type == "text" and answer.content[0].text == "hello"
        with pytest.raises(anthropic.BadRequestError) as bad:
            await sdk.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=[{"role": "user", "content": "hi"}],
                tools=[{"type": "web_search_20250305", "name": "web_search"}],  # type: ignore[list-item]
            )
        assert bad.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        assert "server tools" in bad.value.body["error"]["message"]  # type: ignore[index]
        bearer = anthropic.AsyncAnthropic(  # Authorization: Bearer, not x-api-key
            auth_token=token, base_url=gateway.url, max_retries=0,
            default_headers={"X-Chronicle-Session": session},
        )  # fmt: skip
        upstream.script(Reply(content="by bearer"))
        answer = await bearer.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        assert answer.content[0].type == "text" and answer.content[0].text == "by bearer"
        stranger = anthropic.AsyncAnthropic(
            api_key="not-a-token", base_url=gateway.url, max_retries=0
        )
        with pytest.raises(anthropic.AuthenticationError) as refused:
            await stranger.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
        upstream.script(Reply(status=429, error="slow down", headers={"Retry-After": "0"}))
        with pytest.raises(anthropic.RateLimitError) as limited:
            await sdk.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
        assert "slow down" in limited.value.body["error"]["message"]  # type: ignore[index]
        for each in (sdk, bearer, stranger):
            await each.close()

    asyncio.run(talk())


def test_hostile_input_is_refused_in_anthropics_shape_or_recorded_as_sent(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    session = f"anthropic-hostile-{uuid.uuid4().hex[:8]}"
    sdk = client(gateway, token, session)
    hello: list[Any] = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.NotFoundError) as unknown:
        sdk.messages.create(model="gpt-4o", max_tokens=10, messages=hello)
    assert unknown.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    assert "not allowed by this Chronicle deployment" in unknown.value.message
    with pytest.raises(anthropic.APIStatusError) as large:
        sdk.messages.create(model=MODEL, max_tokens=10, messages=[
            {"role": "user", "content": "x" * (10 * 1024 * 1024)}
        ])  # fmt: skip
    assert large.value.status_code == 413
    assert large.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError) as schema:
        sdk.messages.create(
            model=MODEL,
            max_tokens=10,
            messages=hello,
            tools=[{"name": "t", "input_schema": "not a schema"}],  # type: ignore[typeddict-item]
        )
    assert schema.value.body["error"]["message"] == (  # type: ignore[index]
        "tools.0.input_schema: Input should be a valid dictionary"
    )
    asked = len(upstream.requests)
    upstream.script(Reply(content="ok"))
    # the SDK cannot encode a lone surrogate: the JSON escape, as another client sends it
    body = {
        "model": MODEL,
        "max_tokens": 10,
        "system": "caf\udce9",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a\x00b caf\udce9"}]}],
    }
    raw = httpx.post(
        f"{gateway.url}/v1/messages",
        content=json.dumps(body),  # ensure_ascii: the surrogate as \\udce9
        headers={"x-api-key": token, "content-type": "application/json",
                 "X-Chronicle-Session": session},
        timeout=120,  # the server's first model call imports litellm
    )  # fmt: skip
    assert raw.status_code == 200, raw.text
    assert Message.model_validate(raw.json()).content[0].type == "text"
    assert len(upstream.requests) == asked + 1  # the refused requests never reached the model
    sent = upstream.requests[-1]["messages"]
    assert sent[1]["content"] == "a\x00b caf\\udce9"  # the lone surrogate escaped on the wire
    (call,) = llm_calls(gateway, token, raw.headers["x-chronicle-session"])
    assert call["response"]["content"] == "ok"


def test_count_tokens_answers_without_calling_the_model(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    sdk = client(gateway, token, f"anthropic-count-{uuid.uuid4().hex[:8]}")
    asked = len(upstream.requests)
    short = sdk.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    longer = sdk.messages.count_tokens(
        model=MODEL,
        system="You are a careful engineer.",
        messages=[{"role": "user", "content": "Please read every file of the repository."}],
        tools=TOOLS,
    )
    assert 0 < short.input_tokens < longer.input_tokens
    assert len(upstream.requests) == asked
    with pytest.raises(anthropic.NotFoundError):
        sdk.messages.count_tokens(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])


def first_llm_call(gateway: ServerProcess, token: str, session: str) -> dict[str, Any]:
    """The session's first llm.call, once it is in the log (read through its live stream)."""
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
                    found: dict[str, Any] = event["payload"]
                    return found
    raise AssertionError("the stream ended without an llm.call")


def test_an_sdk_that_leaves_mid_stream_leaves_its_call_recorded_as_cut(
    gateway: ServerProcess, token: str, upstream: FakeLlmServer
) -> None:
    upstream.hold()
    upstream.script(
        Reply(content="never finished", stream_pieces=["never", " finished"], stream_held=True)
    )
    sdk = client(gateway, token, f"anthropic-cut-{uuid.uuid4().hex[:8]}")
    with sdk.messages.stream(
        model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "Say it slowly."}]
    ) as stream:
        session = stream.response.headers["x-chronicle-session"]
        assert next(iter(stream.text_stream)) == "never"
    # the SDK closed the response; the model still holds the rest of its reply
    call = first_llm_call(gateway, token, session)
    assert call["error_kind"] == "cut"
    assert call["response"]["content"] == "never"
    upstream.release_held()
    asyncio.run(upstream.wait_until(lambda s: s.cut_streams == 1))  # the upstream closed too
