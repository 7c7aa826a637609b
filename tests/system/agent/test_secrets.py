"""Secrets never enter the log: a key a command prints, a key in a provider's error, the
sandbox's environment. Checked in the stored rows themselves, and in what the model saw."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import asyncpg
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
        database_url, config=settings.store, masker=settings.masker()
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
        database_url, config=settings.store, masker=settings.masker()
    ) as store:
        session, outcome = await run_session(
            store, settings, SessionOptions(workspace=tmp_path / "ws"), task="hello"
        )
        assert outcome == "error"
        [call] = [e.payload for e in await store.read(session) if e.kind == "llm.call"]
        assert "[secret CHRONICLE_LLM_API_KEY]" in call["error"]
        assert KEY not in await stored_text(store)


URL_PASSWORD = "url-pass-5150xyz"
URL_KEY = "qk-0042-abcdef"


async def every_stored_text(superuser_url: str) -> str:
    """Every row of every table of the database, as text (blobs and llm_messages among them)."""
    connection = await asyncpg.connect(superuser_url)
    try:
        tables = await connection.fetch(
            "SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables "
            "WHERE schemaname = 'public'"
        )
        texts = [
            row["t"]
            for table in tables
            for row in await connection.fetch(f"SELECT t::text AS t FROM {table['name']} t")
        ]
        assert await connection.fetchval("SELECT count(*) FROM blobs")  # the output is one
    finally:
        await connection.close()
    return "\n".join(texts)


async def test_credentials_in_a_base_url_given_for_one_run_are_masked_everywhere(
    database_url: str, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """``chronicle run --base-url`` with a key in its query, or a password in its user info
    (URLs the settings do not know): not in session.created's config, llm.call's params, a
    failed call's error, a command's output that echoes it (in a blob), nor anywhere else."""
    settings = settings_for(fake_llm, tmp_path, blob_threshold_bytes=1024, llm_retries=0)
    echoed = f"https://proxy:{URL_PASSWORD}@mirror.example/simple?api_key={URL_KEY}"
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command=f"echo '{echoed}'; seq 1 2000")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    with socket.socket() as closed:  # a port nothing listens on: the call fails
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
    with_key = f"{fake_llm.base_url}?key={URL_KEY}"
    with_password = f"http://proxy:{URL_PASSWORD}@127.0.0.1:{closed_port}/v1?token={URL_KEY}"
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as store:
        session, outcome = await run_session(
            store, settings, SessionOptions(workspace=tmp_path / "ws", base_url=with_key),
            task="install from the mirror",
        )  # fmt: skip
        assert outcome == "finished"
        failed, failed_outcome = await run_session(
            store, settings, SessionOptions(workspace=tmp_path / "ws2", base_url=with_password),
            task="hello",
        )  # fmt: skip
        assert failed_outcome == "error"
        events = await store.read(session)
        created = next(e.payload for e in events if e.kind == "session.created")
        assert created["config"]["base_url"] == f"{fake_llm.base_url}?key=[secret url key]"
        [output] = [e.payload["output"] for e in events if e.kind == "run.output"]
        assert "proxy:[secret url password]@mirror.example/simple?api_key=[secret url" in output
        calls = [e.payload for e in events if e.kind == "llm.call"]
        assert {c["params"]["base_url"] for c in calls} == {created["config"]["base_url"]}
        [call] = [e.payload for e in await store.read(failed) if e.kind == "llm.call"]
        assert call["error"] and call["params"]["base_url"] == (
            f"http://proxy:[secret url password]@127.0.0.1:{closed_port}/v1"
            "?token=[secret url token]"
        )
        assert (await store.verify(session)).ok and (await store.verify(failed)).ok
    stored = await every_stored_text(database_url)
    for secret in (URL_PASSWORD, URL_KEY):
        assert secret not in stored
