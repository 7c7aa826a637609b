"""Images reach models that take them; a text-only model gets a note, and the log says so."""

from __future__ import annotations

import json
import uuid

from app.llm import LlmConfig, LlmGateway
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer, Reply

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
MESSAGES = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": [{"type": "text", "text": "The screenshot:"}, IMAGE]},
]


def config(fake: FakeLlmServer, model: str, vision: bool | None) -> LlmConfig:
    return LlmConfig(
        model=model, base_url=fake.base_url, api_key="sk-test", vision=vision,
        native_tool_calling=True, retry_min_wait=0.01, retry_max_wait=0.05,
    )  # fmt: skip


async def stored_prompt(store: EventStore, session: uuid.UUID) -> str:
    [call] = await store.read(session)
    rows = await store.read_messages(call.payload["prompt"])
    return json.dumps(rows)


async def test_a_model_unknown_to_litellm_is_sent_the_image(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(Reply(content="a cat"))
    session = uuid.uuid4()
    await LlmGateway(store, config(fake_llm, "openai/fake-model", None)).complete(
        session, MESSAGES, []
    )
    assert "image_url" in json.dumps(fake_llm.requests[0]["messages"])


async def test_a_text_only_model_gets_a_note_and_the_log_records_what_was_sent(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(Reply(content="noted"), Reply(content="noted"))
    # litellm's map does not mark gpt-3.5-turbo as taking images; the setting can say so too.
    for model, vision in (("openai/gpt-3.5-turbo", None), ("openai/fake-model", False)):
        session = uuid.uuid4()
        gateway = LlmGateway(store, config(fake_llm, model, vision))
        await gateway.complete(session, MESSAGES, [])
        sent = json.dumps(fake_llm.requests[-1]["messages"])
        assert "image_url" not in sent and "does not take images" in sent
        recorded = await stored_prompt(store, session)
        assert "image_url" not in recorded and "does not take images" in recorded
