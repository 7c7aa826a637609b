"""The model gateway through litellm against a real OpenAI-compatible HTTP server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid

import pytest

from app.config import Settings
from app.llm import LlmConfig, LlmError, LlmGateway, LlmNotConfiguredError
from app.llm.errors import is_configuration_error
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

BASH = {
    "type": "function",
    "function": {
        "name": "execute_bash",
        "description": "Run a command.",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "the command"},
                "timeout": {"type": "integer", "description": "seconds"},
            },
            "required": ["command"],
        },
    },
}
MESSAGES = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "List the files."},
]


def config(fake: FakeLlmServer, **overrides: object) -> LlmConfig:
    values: dict[str, object] = {
        "model": "openai/fake-model",
        "base_url": fake.base_url,
        "api_key": "sk-test-secret",
        "retry_min_wait": 0.01,
        "retry_max_wait": 0.05,
        "native_tool_calling": True,
    }
    values.update(overrides)
    return LlmConfig.model_validate(values)


async def test_native_tool_call_is_recorded_as_one_event(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(Reply(tool_calls=[tool_call("execute_bash", command="ls")], cached_tokens=40))
    gateway = LlmGateway(store, config(fake_llm))
    session = uuid.uuid4()
    reply = await gateway.complete(session, MESSAGES, [BASH])
    assert [call.name for call in reply.tool_calls] == ["execute_bash"]
    assert json.loads(reply.tool_calls[0].arguments) == {"command": "ls"}
    [event] = await store.read(session)
    payload = event.payload
    assert event.kind == "llm.call" and payload["attempts"] == 1 and payload["error"] is None
    assert payload["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cached_tokens": 40,
        "total_tokens": 120,
    }
    assert payload["response"]["finish_reason"] == "tool_calls"
    assert payload["latency_ms"] > 0 and payload["tool_calling"] == "native"
    assert "sk-test-secret" not in json.dumps(payload)  # secrets never enter the log
    assert fake_llm.requests[0]["tools"][0]["function"]["name"] == "execute_bash"
    assert fake_llm.requests[0]["_authorization"] == "Bearer sk-test-secret"
    stored = await store.pool.fetch("SELECT encode(hash, 'hex') AS h, message FROM llm_messages")
    by_hash = {row["h"]: row["message"] for row in stored}
    assert [by_hash[h] for h in payload["prompt"]] == MESSAGES
    assert by_hash[payload["tools"]] == {"tools": [BASH]}


async def test_messages_are_stored_once_and_fingerprints_are_stable(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(Reply(content="a"), Reply(content="b"), Reply(content="c"))
    gateway = LlmGateway(store, config(fake_llm))
    session = uuid.uuid4()
    first = await gateway.complete(session, MESSAGES, [BASH])
    second = await gateway.complete(session, MESSAGES, [BASH])
    longer = await gateway.complete(
        session, [*MESSAGES, {"role": "assistant", "content": "a"}], [BASH]
    )
    assert first.event.payload["fingerprint"] == second.event.payload["fingerprint"]
    assert longer.event.payload["fingerprint"] != first.event.payload["fingerprint"]
    count = await store.pool.fetchval("SELECT count(*) FROM llm_messages")
    assert count == 4  # system, user, tools, and the one new assistant message


async def test_a_step_stores_its_messages_with_its_call_in_one_append(
    store: EventStore, fake_llm: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``put_messages`` round trip of its own: a recorded call takes its new messages into
    its append; an unrecorded one hands them to the caller, who appends them with it, and
    they are not handed again once the log shows that call (its ``previous``)."""
    fake_llm.script(Reply(content="a"), Reply(content="b"), Reply(content="c"))
    put_messages: list[object] = []
    monkeypatch.setattr(store, "put_messages", lambda *args: put_messages.append(args))
    gateway = LlmGateway(store, config(fake_llm))
    session = uuid.uuid4()
    prompt = [*MESSAGES]
    first = await gateway.complete(session, prompt, [BASH], record=False)
    assert first.event is None and len(first.messages) == 3  # system, user, the tool list
    recorded = await store.append(session, [first.call], messages=first.messages)
    prompt += [{"role": "assistant", "content": "a"}, {"role": "user", "content": "go on"}]
    second = await gateway.complete(
        session, prompt, [BASH], record=False, previous=recorded[0].payload
    )
    assert list(second.messages) == second.call.prompt  # only the two new ones
    # not appended (as when the caller's append failed): the next call hands them again
    prompt += [{"role": "assistant", "content": "b"}]
    third = await gateway.complete(session, prompt, [BASH], previous=recorded[0].payload)
    assert third.event is not None and third.messages == {}
    assert put_messages == []
    stored = await store.read_messages([*first.call.prompt, first.call.tools, *third.call.prompt])
    assert len(stored) == 3 + 3
    assert (await store.verify(session)).ok


async def test_429_then_200_is_one_call_with_two_attempts(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(
        Reply(status=429, headers={"Retry-After": "1"}, error="slow down"), Reply(content="ok")
    )
    gateway = LlmGateway(store, config(fake_llm))
    session = uuid.uuid4()
    started = time.monotonic()
    reply = await gateway.complete(session, MESSAGES, [])
    assert time.monotonic() - started >= 0.9, "Retry-After was not honoured"
    assert reply.content == "ok"
    events = await store.read(session)
    assert len(events) == 1 and events[0].payload["attempts"] == 2
    assert len(fake_llm.requests) == 2


async def test_server_errors_are_retried(store: EventStore, fake_llm: FakeLlmServer) -> None:
    fake_llm.script(Reply(status=500), Reply(status=503), Reply(content="finally"))
    reply = await LlmGateway(store, config(fake_llm)).complete(uuid.uuid4(), MESSAGES, [])
    assert reply.content == "finally" and reply.event.payload["attempts"] == 3


async def test_retries_are_capped(store: EventStore, fake_llm: FakeLlmServer) -> None:
    fake_llm.script(*[Reply(status=502) for _ in range(10)])
    session = uuid.uuid4()
    with pytest.raises(LlmError) as raised:
        await LlmGateway(store, config(fake_llm, retries=2)).complete(session, MESSAGES, [])
    assert raised.value.kind == "unavailable" and raised.value.attempts == 3
    assert len(fake_llm.requests) == 3
    [event] = await store.read(session)
    assert event.payload["error"] and event.payload["attempts"] == 3


@pytest.mark.parametrize(
    ("status", "code", "kind", "words"),
    [
        (401, "invalid_api_key", "auth", "CHRONICLE_LLM_API_KEY"),
        (403, None, "auth", "credentials"),
        (404, "model_not_found", "not_found", "CHRONICLE_LLM_MODEL"),
        (400, None, "bad_request", "refused the request"),
        (429, "insufficient_quota", "quota", "quota"),
    ],
)
async def test_permanent_failures_are_not_retried(
    store: EventStore, fake_llm: FakeLlmServer, status: int, code: str | None, kind: str, words: str
) -> None:
    fake_llm.script(
        Reply(
            status=status,
            error_code=code,
            error="You exceeded your current quota" if code == "insufficient_quota" else "nope",
        ),
        Reply(content="never"),
    )
    session = uuid.uuid4()
    with pytest.raises(LlmError) as raised:
        await LlmGateway(store, config(fake_llm)).complete(session, MESSAGES, [])
    assert raised.value.kind == kind and words in raised.value.message
    assert len(fake_llm.requests) == 1
    [event] = await store.read(session)
    assert event.payload["error"] and event.payload["attempts"] == 1


async def test_configuration_failures_are_named_as_such(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    """A model name no provider answers to, and an address where nothing listens, are
    failures of the configuration (an evaluation run stops on them). Before: "the model
    refused the request" and "the model server failed"."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()  # nothing listens there now: connections are refused
    fake_llm.key, fake_llm.models = "sk-test-secret", {"fake-model"}
    cases: list[tuple[dict[str, object], str, str, int]] = [
        ({"model": "nosuchprovider/x"}, "no_provider", "no model provider is known", 0),
        ({"base_url": nowhere, "retries": 1}, "unreachable", f"nothing answers at {nowhere}", 0),
        ({"api_key": "sk-wrong"}, "auth", "refused the credentials", 1),
        ({"model": "openai/gone"}, "not_found", "The model `gone` does not exist", 1),
    ]
    for overrides, kind, words, requests in cases:
        sent = len(fake_llm.requests)
        with pytest.raises(LlmError) as raised:
            await LlmGateway(store, config(fake_llm, **overrides)).complete(
                uuid.uuid4(), MESSAGES, []
            )
        assert (raised.value.kind, is_configuration_error(kind)) == (kind, True)
        assert words in raised.value.message
        assert len(fake_llm.requests) - sent == requests


async def test_context_window_error_is_not_retried(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(
        Reply(
            status=400,
            error_code="context_length_exceeded",
            error=(
                "This model's maximum context length is 8192 tokens. "
                "However, your messages resulted in 9000 tokens."
            ),
        ),
        Reply(content="never"),
    )
    with pytest.raises(LlmError) as raised:
        await LlmGateway(store, config(fake_llm)).complete(uuid.uuid4(), MESSAGES, [])
    assert raised.value.kind == "context_window"
    assert len(fake_llm.requests) == 1


async def test_prompt_based_tool_calling(store: EventStore, fake_llm: FakeLlmServer) -> None:
    fake_llm.script(
        Reply(
            content=(
                "I will look.\n<function=execute_bash>\n<parameter=command>ls -la</parameter>\n"
                "<parameter=timeout>30</parameter>\n</function>"
            )
        )
    )
    gateway = LlmGateway(store, config(fake_llm, native_tool_calling=False))
    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "execute_bash", "arguments": '{"command": "pwd"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "execute_bash", "content": "/workspace"},
    ]
    reply = await gateway.complete(uuid.uuid4(), history, [BASH])
    sent = fake_llm.requests[0]
    assert "tools" not in sent
    assert (
        "<function=TOOL_NAME>" in sent["messages"][0]["content"]
        and "execute_bash" in sent["messages"][0]["content"]
    )
    assert "<function=execute_bash>" in sent["messages"][2]["content"]
    assert sent["messages"][3]["role"] == "user" and "/workspace" in sent["messages"][3]["content"]
    assert reply.content == "I will look."
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("execute_bash", {"command": "ls -la", "timeout": 30})
    ]
    assert reply.event.payload["tool_calling"] == "prompt"


async def test_configured_prices_give_the_cost(store: EventStore, fake_llm: FakeLlmServer) -> None:
    fake_llm.script(Reply(content="x", prompt_tokens=1000, completion_tokens=500))
    gateway = LlmGateway(
        store, config(fake_llm, input_cost_per_token=0.000002, output_cost_per_token=0.00001)
    )
    reply = await gateway.complete(uuid.uuid4(), MESSAGES, [])
    assert reply.event.payload["cost_usd"] == pytest.approx(0.002 + 0.005)


async def test_concurrency_limit_per_model(store: EventStore, fake_llm: FakeLlmServer) -> None:
    fake_llm.script(*[Reply(content=str(i), delay=0.2) for i in range(6)])
    gateway = LlmGateway(store, config(fake_llm, max_concurrency=2))
    await asyncio.gather(*(gateway.complete(uuid.uuid4(), MESSAGES, []) for _ in range(6)))
    assert fake_llm.max_in_flight == 2


def test_no_model_configured_says_how_to_configure(tmp_path) -> None:
    with pytest.raises(LlmNotConfiguredError, match="CHRONICLE_LLM_MODEL"):
        Settings(data_dir=tmp_path, llm_model=None).llm.config()
    settings = Settings(
        data_dir=tmp_path, llm_model="openai/x", llm_api_key="sk-secret-123", llm_temperature=0.5
    )
    made = settings.llm.config(base_url="http://h/v1", model=None)
    assert (made.model, made.base_url, made.temperature) == ("openai/x", "http://h/v1", 0.5)
    assert made.api_key is not None and made.api_key.get_secret_value() == "sk-secret-123"
    assert "sk-secret-123" not in json.dumps(made.public())


async def test_unusable_replies_are_recorded_and_returned_not_raised(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(
        Reply(body='{"id": "x", "object": "chat.completion", "created": 1, "choices": []}'),
        Reply(body="<!doctype html><title>Open WebUI</title>", content_type="text/html"),
        Reply(content="never asked"),
    )
    gateway = LlmGateway(store, config(fake_llm))
    session = uuid.uuid4()
    empty = await gateway.complete(session, MESSAGES, [BASH])
    html = await gateway.complete(session, MESSAGES, [BASH])
    assert empty.error == "the model returned no choices" and empty.tool_calls == []
    assert html.error is not None and fake_llm.base_url in html.error and "not JSON" in html.error
    assert len(fake_llm.requests) == 2  # the HTML page was not retried
    events = await store.read(session)
    assert [(e.payload["error"], e.payload["error_kind"]) for e in events] == [
        (empty.error, "bad_response"),
        (html.error, "bad_response"),
    ]
    assert [empty.event, html.event] == events


async def test_a_prompt_with_nul_and_lone_surrogates_is_stored_and_sent(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    # What a model once replied comes back in the next prompt, as it was.
    fake_llm.script(Reply(content="ok"))
    odd = [*MESSAGES, {"role": "assistant", "content": "caf\udce9 a\x00b"}]
    reply = await LlmGateway(store, config(fake_llm)).complete(uuid.uuid4(), odd, [])
    assert reply.content == "ok" and reply.event is not None
    # Before: litellm could not encode the request ("surrogates not allowed"), retried it as
    # a server failure and the session ended in error. A surrogate travels as its escape.
    assert fake_llm.requests[0]["messages"][-1]["content"] == "caf\\udce9 a\x00b"
    rows = await store.pool.fetch("SELECT encode(hash, 'hex') AS h FROM llm_messages")
    assert set(reply.event.payload["prompt"]) <= {row["h"] for row in rows}


async def test_loading_litellm_never_stalls_the_event_loop(
    store: EventStore, fake_llm: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """litellm's import takes seconds of CPU; done on the event loop (as `complete` did
    before), every other task of the process (subscriptions, the executor) stood still as
    long. Here the import is made to take 0.5 s: the loop keeps ticking meanwhile (the
    import runs in another thread), and the call still goes through litellm."""
    import app.llm.gateway as gateway_module

    real_import = gateway_module._import_litellm
    threads: list[bool] = []
    importing: list[float] = []

    def slow_import() -> object:
        if not threads:  # the first import is the slow one; later ones find it loaded
            threads.append(threading.current_thread() is threading.main_thread())
            importing.append(time.monotonic())
            time.sleep(0.5)  # the import's CPU time, as the loop would feel it
            importing.append(time.monotonic())
        return real_import()

    monkeypatch.setattr(gateway_module, "_import_litellm", slow_import)
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    fake_llm.script(Reply(content="one"), Reply(content="two"))
    gateway = LlmGateway(store, config(fake_llm))
    ticking = asyncio.create_task(ticker())
    try:
        await asyncio.sleep(0.02)
        first = await gateway.complete(uuid.uuid4(), MESSAGES, [])
        second = await gateway.complete(uuid.uuid4(), MESSAGES, [])
    finally:
        ticking.cancel()
    assert (first.content, second.content) == ("one", "two")
    assert threads == [False], "first imported in a worker thread"
    start, end = importing
    during = [tick for tick in ticks if start < tick < end]
    assert len(during) >= 10, f"the event loop ticked {len(during)} times in the 0.5 s import"
