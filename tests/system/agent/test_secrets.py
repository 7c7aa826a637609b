"""Secrets never enter the log: a key a command prints, a key in a provider's error, the
sandbox's environment. Checked in the stored rows themselves, and in what the model saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

KEY = "sk-live-0123456789abcdefXYZ"
TOKEN = "tok-9876543210zyxwvu"
UNNAMED = "pw-never-reaches-the-sandbox-77"


async def stored_text(store: EventStore) -> str:
    """Every payload and every stored prompt message, as the database holds them."""
    events = await store.pool.fetch("SELECT payload::text AS t FROM events")
    messages = await store.pool.fetch("SELECT message::text AS t FROM llm_messages")
    return "\n".join(row["t"] for row in [*events, *messages])


async def test_printed_secrets_are_masked_in_events_prompts_and_messages(
    database_url: str, fake_llm: FakeLlmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHRONICLE_TEST_SECRET_TOKEN", TOKEN)
    monkeypatch.setenv("OTHER_SERVICE_PASSWORD", UNNAMED)
    monkeypatch.setenv("PROJECT_MODE", "integration-mode-42")
    settings = settings_for(
        fake_llm, tmp_path, sandbox_env=["PROJECT_MODE", "CHRONICLE_TEST_SECRET_TOKEN"]
    ).model_copy(update={"llm_api_key": SecretStr(KEY)})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "leak.txt").write_text(f"the key is {KEY}\n")
    command = (
        "cat leak.txt; echo mode=$PROJECT_MODE; echo tok=$CHRONICLE_TEST_SECRET_TOKEN; "
        "env | grep -c -e OTHER_SERVICE_PASSWORD -e CHRONICLE_LLM -e OPENAI || true"
    )
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command=command)]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    async with await EventStore.open(
        database_url, config=settings.store_config(), masker=settings.masker()
    ) as store:
        session, outcome = await run_session(
            store, settings, SessionOptions(workspace=workspace), task=f"Do not print {KEY}."
        )
        assert outcome == "finished"
        events = await store.read(session)
        [output] = [e.payload["output"] for e in events if e.kind == "run.output"]
        assert "the key is [secret CHRONICLE_LLM_API_KEY]" in output
        assert "mode=integration-mode-42" in output  # a named variable reaches the sandbox
        assert "tok=[secret CHRONICLE_TEST_SECRET_TOKEN]" in output  # ... masked if secret
        assert output.rstrip().endswith("0")  # nothing unnamed reached the sandbox
        task = next(e for e in events if e.kind == "message").payload["content"]
        assert task == "Do not print [secret CHRONICLE_LLM_API_KEY]."
        stored = await stored_text(store)
        for secret in (KEY, TOKEN, UNNAMED):
            assert secret not in stored
        assert "[secret CHRONICLE_LLM_API_KEY]" in stored  # the prompts hold the masked text
        assert (await store.verify(session)).ok
    # What the model was sent (its Authorization header aside) holds no secret either.
    sent = json.dumps([{k: v for k, v in r.items() if k != "_authorization"}
                       for r in fake_llm.requests])  # fmt: skip
    assert KEY not in sent and TOKEN not in sent
    assert "[secret CHRONICLE_LLM_API_KEY]" in sent


async def test_a_provider_error_quoting_the_key_is_masked(
    database_url: str, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    settings = settings_for(fake_llm, tmp_path).model_copy(update={"llm_api_key": SecretStr(KEY)})
    fake_llm.script(Reply(status=401, error=f"Incorrect API key provided: {KEY}"))
    async with await EventStore.open(
        database_url, config=settings.store_config(), masker=settings.masker()
    ) as store:
        session, outcome = await run_session(
            store, settings, SessionOptions(workspace=tmp_path / "ws"), task="hello"
        )
        assert outcome == "error"
        [call] = [e.payload for e in await store.read(session) if e.kind == "llm.call"]
        assert "[secret CHRONICLE_LLM_API_KEY]" in call["error"]
        assert KEY not in await stored_text(store)
