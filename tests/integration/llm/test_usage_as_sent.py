"""Usage numbers a model server sends, through the real litellm and gateway: odd counts make
a usable reply's usage unknown (never the reply unusable), reasoning and cache counts, the
reasoning text and the reply's id and model are recorded, and priced where litellm knows
their prices."""

from __future__ import annotations

import json
import uuid

import litellm
import pytest

from app.llm import LlmConfig, LlmGateway
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

BASH = {
    "type": "function",
    "function": {
        "name": "execute_bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
MESSAGES = [{"role": "user", "content": "List the files."}]
LS = [tool_call("execute_bash", command="ls")]


def config(fake: FakeLlmServer) -> LlmConfig:
    """gpt-4o (priced by litellm's model map) behind the fake server's URL."""
    return LlmConfig(model="openai/gpt-4o", base_url=fake.base_url, api_key="sk-test",
                     native_tool_calling=True)  # fmt: skip


@pytest.mark.parametrize(
    ("usage_json", "as_sent"),
    [
        ('{"prompt_tokens": 1e999, "completion_tokens": 5, "total_tokens": 1e999}',
         {"prompt_tokens": "inf", "completion_tokens": 5, "total_tokens": "inf"}),
        ('{"prompt_tokens": "abc", "completion_tokens": 5, "total_tokens": "abc"}',
         {"prompt_tokens": "abc", "completion_tokens": 5, "total_tokens": "abc"}),
        ('{"prompt_tokens": -7, "completion_tokens": 5, "total_tokens": -2}',
         {"prompt_tokens": -7, "completion_tokens": 5, "total_tokens": -2}),
        ('{"prompt_tokens": 10000000000000000000000000, "completion_tokens": 5}',
         {"prompt_tokens": "10000000000000000000000000", "completion_tokens": 5}),
    ],
)  # fmt: skip
async def test_a_usable_reply_with_odd_usage_is_kept_and_its_usage_unknown(
    store: EventStore, fake_llm: FakeLlmServer, usage_json: str, as_sent: dict[str, object]
) -> None:
    # Before: 1e999 and "abc" made litellm refuse the reply ("not a chat completion",
    # error_kind bad_response, the tool call lost); -7 was recorded as 0, 10**25 as is.
    fake_llm.script(Reply(content="Looking.", tool_calls=LS, usage_json=usage_json))
    gateway = LlmGateway(store, config(fake_llm))
    session = uuid.uuid4()
    reply = await gateway.complete(session, MESSAGES, [BASH])
    assert reply.error is None and reply.content == "Looking."
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("execute_bash", {"command": "ls"})
    ]
    [event] = await store.read(session)
    payload = event.payload
    assert payload["error"] is None and payload["error_kind"] is None
    assert payload["usage"]["prompt_tokens"] is None and payload["usage"]["completion_tokens"] == 5
    sent = {key: value for key, value in payload["usage"]["as_sent"].items()
            if key in as_sent}  # fmt: skip
    assert sent == as_sent
    assert payload["cost_usd"] is None  # priced model, unknown count: unknown cost
    assert (await store.verify(session)).ok


async def test_reasoning_cache_counts_and_the_reply_id_are_recorded_and_priced(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    # Before: reasoning_content, reasoning tokens, cache writes and the reply's id and model
    # were dropped.
    fake_llm.script(
        Reply(
            content="Done.",
            reasoning_content="The user wants a list; ls it is.",
            prompt_tokens=10**15,
            completion_tokens=500,
            cached_tokens=4000,
            cache_creation_tokens=700,
            reasoning_tokens=300,
        )
    )
    gateway = LlmGateway(store, config(fake_llm))
    session = uuid.uuid4()
    await gateway.complete(session, MESSAGES, [])
    [event] = await store.read(session)
    payload = event.payload
    assert payload["response"]["reasoning_content"] == "The user wants a list; ls it is."
    assert payload["response"]["id"].startswith("chatcmpl-")
    assert payload["response"]["model"] == "openai/gpt-4o".split("/")[1]
    assert payload["usage"] == {
        "prompt_tokens": 10**15,
        "completion_tokens": 500,
        "total_tokens": 10**15 + 500,
        "cached_tokens": 4000,
        "cache_creation_tokens": 700,
        "reasoning_tokens": 300,
    }
    price = litellm.model_cost["gpt-4o"]
    # Cache reads at their own price; reasoning tokens are output tokens.
    expected = ((10**15 - 4000) * price["input_cost_per_token"]
                + 4000 * price["cache_read_input_token_cost"]
                + 500 * price["output_cost_per_token"])  # fmt: skip
    assert payload["cost_usd"] == pytest.approx(expected)
