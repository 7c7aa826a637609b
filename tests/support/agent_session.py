"""Settings for a whole session against the fake model server, as the agent tests run it."""

from __future__ import annotations

from pathlib import Path

from app.config import Settings
from tests.support.fake_llm import FakeLlmServer


def settings_for(fake: FakeLlmServer, tmp_path: Path, **extra: object) -> Settings:
    """The fake model as ``openai/fake-model`` with native tool calling, quick retries and
    polls, a local sandbox; ``extra`` settings on top."""
    values: dict[str, object] = {
        "data_dir": tmp_path / "data",
        "poll_interval": 0.5,
        "llm_model": "openai/fake-model",
        "llm_base_url": fake.base_url,
        "llm_api_key": "sk-fake",
        "llm_native_tool_calling": True,
        "llm_retry_min_wait": 0.01,
        "llm_retry_max_wait": 0.05,
        "sandbox_no_output_timeout": 2.0,
    }
    values.update(extra)
    return Settings.model_validate(values)
