"""A request prepared from the previous one's digest is the request prepared from scratch."""

from __future__ import annotations

import asyncio
from typing import Any

from app.llm import LlmConfig, LlmGateway
from app.llm.fingerprint import PromptDigest, fingerprint, stable_hash


def test_the_digest_gives_the_fingerprint_of_the_whole_prompt() -> None:
    params: dict[str, Any] = {"temperature": 0.7, "max_tokens": 100, "note": "é\u2028"}
    digest = PromptDigest()
    hashes: list[str] = []
    assert digest.fingerprint("m/ö", "t", params) == fingerprint("m/ö", [], "t", params)
    for n in range(5):
        new = [stable_hash({"role": "user", "content": f"{n}-{i}"}) for i in range(n)]
        digest.add(new)
        hashes += new
        assert digest.fingerprint("m/ö", "t", params) == fingerprint("m/ö", hashes, "t", params)


class _NoStore:
    masker = None

    def __init__(self) -> None:
        self.stored: list[str] = []

    async def put_messages(self, hashes: list[str], texts: list[str]) -> int:
        self.stored += hashes
        return len(hashes)


def test_a_growing_or_changed_prompt_prepares_as_from_scratch() -> None:
    # Before the fix every request re-masked and re-hashed the whole conversation (the
    # replay of a 1,000-step session spent seconds there); the fast path must not change a
    # single hash, and must store each message once.
    store = _NoStore()
    gateway = LlmGateway(store, LlmConfig(model="m", native_tool_calling=True))  # type: ignore[arg-type]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    prompts = []
    for n in range(4):
        conversation = [*conversation, {"role": "user", "content": f"q{n}"}]
        prompts.append(conversation)
    prompts.append([conversation[0], {"role": "user", "content": "condensed"}])  # a new prefix
    for messages in prompts:
        request = gateway.prepare(messages, tools)
        fresh = LlmGateway(store, LlmConfig(model="m", native_tool_calling=True))  # type: ignore[arg-type]
        assert request == fresh.prepare(messages, tools)._replace(stored=request.stored)
        asyncio.run(gateway.store_prompt(request))
    assert sorted(set(store.stored)) == sorted(store.stored)  # none stored twice
    assert len(store.stored) == 1 + 4 + 1 + 1  # system, q0..q3, condensed, the tool list


def test_the_digest_follows_a_change_of_model_tools_or_parameters() -> None:
    # The text after the messages is made once and reused while model, tools and parameters
    # stay the same; each change (even of the same dict, changed in place) must show.
    digest = PromptDigest()
    digest.add([stable_hash({"role": "user", "content": "q"})])
    hashes = [stable_hash({"role": "user", "content": "q"})]
    params: dict[str, Any] = {"temperature": 0.0}
    for model, tools in [("m", "t"), ("m", "t"), ("n", "t"), ("n", "u")]:
        assert digest.fingerprint(model, tools, params) == fingerprint(model, hashes, tools, params)
    params["temperature"] = 0.5
    assert digest.fingerprint("n", "u", params) == fingerprint("n", hashes, "u", params)
