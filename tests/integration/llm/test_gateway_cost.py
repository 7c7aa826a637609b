"""A call's cost by litellm's prices is worked out once: litellm's own figure for the response
is recorded, and a model litellm has no price for is looked up in its map once per gateway,
not on every call (``app.llm.cost``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from app.llm import LlmConfig, LlmGateway
from app.llm.gateway import preload_client
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer, Reply

MESSAGES = [{"role": "user", "content": "Say done."}]


def config(fake: FakeLlmServer, model: str) -> LlmConfig:
    return LlmConfig.model_validate(
        {"model": model, "base_url": fake.base_url, "api_key": "sk-test", "retries": 0}
    )


@pytest.fixture
def pricings(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every model the gateway asks litellm to price a response of (the real function runs)."""
    preload_client()
    import litellm

    asked: list[Any] = []
    real = litellm.completion_cost

    def counted(*args: Any, **kwargs: Any) -> float:
        asked.append(getattr(kwargs.get("completion_response"), "model", None))
        return float(real(*args, **kwargs))

    monkeypatch.setattr(litellm, "completion_cost", counted)
    return asked


async def test_a_priced_model_s_cost_is_litellm_s_own_figure_for_the_reply(
    store: EventStore, fake_llm: FakeLlmServer, pricings: list[Any]
) -> None:
    import litellm

    fake_llm.script(Reply(content="done", prompt_tokens=1000, completion_tokens=500))
    gateway = LlmGateway(store, config(fake_llm, "openai/gpt-4o"))
    reply = await gateway.complete(uuid.uuid4(), MESSAGES, [])
    prices = litellm.model_cost["gpt-4o"]
    expected = 1000 * prices["input_cost_per_token"] + 500 * prices["output_cost_per_token"]
    assert reply.event is not None
    assert reply.event.payload["cost_usd"] == pytest.approx(expected)
    assert pricings == []  # litellm priced it as it returned it: not priced a second time


async def test_a_model_without_a_price_is_looked_up_once(
    store: EventStore, fake_llm: FakeLlmServer, pricings: list[Any]
) -> None:
    fake_llm.script(*[Reply(content=str(i)) for i in range(3)])
    gateway = LlmGateway(store, config(fake_llm, "openai/our-own-model"))
    session = uuid.uuid4()
    costs = []
    for _ in range(3):
        reply = await gateway.complete(session, MESSAGES, [])
        assert reply.event is not None
        costs.append(reply.event.payload["cost_usd"])
    assert costs == [None, None, None]
    assert pricings == ["our-own-model"]
