"""A new session's recorded configuration is made one way, whether ``chronicle run`` or the
API creates it: the same keys and values for the same choices, and never a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agent.codeact import CodeActAgent
from app.config import Settings
from app.events.masking import SecretMasker
from app.runtime.image import image_tag
from app.server.creation import NewSession, SessionLimits, session_config
from app.sessions.run_config import DEFAULT_MAX_ITERATIONS, run_config
from app.sessions.runner import SessionError, _recorded_base_url


def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        llm_model="openai/recorded",
        llm_api_key="sk-secret-key",
        llm_base_url="http://127.0.0.1:9/v1",
    )


def test_the_api_records_what_a_run_records_for_the_same_choices(tmp_path: Path) -> None:
    config = settings(tmp_path)
    new = NewSession(
        task="fix it", runtime="docker", limits=SessionLimits(max_iterations=7, max_cost_usd=0.5)
    )
    recorded, model = session_config(config, new, tmp_path / "ws")
    as_run = run_config(
        agent=CodeActAgent,
        workspace=tmp_path / "ws",
        runtime="docker",
        sandbox_base_image=config.sandbox.docker.base_image,
        llm=config.llm.config(),
        mcp_servers=config.mcp_servers,
        max_iterations=7,
        max_cost_usd=0.5,
        stuck_detection=True,
    )
    assert recorded == as_run and model == "openai/recorded"
    assert recorded.image == image_tag(config.sandbox.docker.base_image)
    assert recorded.tools == CodeActAgent.builtin_tool_names()
    assert "sk-secret-key" not in json.dumps(recorded.stored())  # the key never enters the log


def test_defaults_mcp_tools_and_an_evaluations_additions(tmp_path: Path) -> None:
    config = settings(tmp_path)
    recorded = run_config(
        agent=CodeActAgent,
        workspace=tmp_path,
        runtime="local",
        sandbox_base_image=config.sandbox.docker.base_image,
        llm=config.llm.config(),
        mcp_servers=[],
        mcp_tool_names=["files__read"],
        max_iterations=None,
        max_cost_usd=None,
        stuck_detection=False,
        extra={"evaluation_run": "nightly"},
    )
    assert recorded.stored()["image"] is None  # only a docker runtime names an image
    assert recorded.max_iterations == DEFAULT_MAX_ITERATIONS
    assert recorded.tools == [*CodeActAgent.builtin_tool_names(), "files__read"]
    assert recorded.evaluation is not None and recorded.evaluation.run == "nightly"
    assert recorded.stuck_detection is False


def test_a_resume_never_calls_a_masked_model_url(tmp_path: Path) -> None:
    """session.created holds the base URL with its credentials masked: a resume uses the
    configured URL it came from, or asks for the URL again, never the placeholder."""
    masker = SecretMasker()
    configured = "http://proxy:pw-1234@llm.local/v1"
    recorded = masker.mask_text(configured)
    assert recorded == "http://proxy:[secret url password]@llm.local/v1"
    assert _recorded_base_url(recorded, configured, masker) == configured
    assert _recorded_base_url("http://plain/v1", configured, masker) == "http://plain/v1"
    with pytest.raises(SessionError, match="pass --base-url"):
        _recorded_base_url(recorded, "http://other/v1", masker)
