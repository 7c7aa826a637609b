"""No key for the model: one clear error after one attempt, saying how to give the key; the
settings file's key then reaches the model on `resume`.

Before: the OpenAI SDK's "Missing credentials" came back from litellm as a 500, so it was
retried as a server error six times (minutes with the default backoff) and ended with "the
model server failed".
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from app.store import EventStore
from tests.support.agent_cli import agent_environment, without_model_keys
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


@pytest.mark.slow
async def test_a_missing_key_is_one_clear_error_then_the_settings_key_is_used(
    store: EventStore, fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    quick_retries = {"CHRONICLE_LLM_RETRY_MIN_WAIT": "0.01", "CHRONICLE_LLM_RETRY_MAX_WAIT": "0.02"}
    env = without_model_keys(
        agent_environment(fake_llm, app_database_url, tmp_path, **quick_retries)
    )
    session = str(uuid.uuid4())
    failed = chronicle(
        "run", "--workspace", str(workspace), "--session", session, "Hi.", env=env, timeout=120
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr
    summary = failed.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"session {session}: error (the model call failed: no API key")
    for way in ("CHRONICLE_LLM_API_KEY", "--api-key-file", "the settings file"):
        assert way in summary
    events = await store.read(uuid.UUID(session))
    [call] = [e.payload for e in events if e.kind == "llm.call"]
    assert call["attempts"] == 1 and call["error_kind"] == "auth"
    assert events[-2].kind == "agent.state" and events[-2].payload["state"] == "error"
    assert not fake_llm.requests  # the SDK refused to send it

    key_file = tmp_path / "model.key"
    key_file.write_text("sk-from-the-settings-file\n")
    settings_file = tmp_path / "chronicle.toml"
    assert env["CHRONICLE_CONFIG"] == str(settings_file)
    settings_file.write_text(f'llm_api_key_file = "{key_file}"\n')
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="hello")]))
    resumed = chronicle("resume", session, env=env, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert fake_llm.requests[0]["_authorization"] == "Bearer sk-from-the-settings-file"
