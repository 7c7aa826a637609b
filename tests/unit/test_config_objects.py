"""The settings build each lower package's config object (docs/architecture.md: only sessions
and above read ``Settings``): every setting reaches its package, and the defaults agree, so
a store or a sandbox made without the settings behaves like one made from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Settings, default_config_file
from app.llm.errors import LlmNotConfiguredError
from app.runtime.config import DockerConfig, ExecutorConfig, LocalConfig
from app.runtime.local.limits import SandboxLimits
from app.store.config import DatabaseConfig, StoreConfig

MIB = 1024**2


def defaults() -> Settings:
    """The settings' own defaults, without the environment or a settings file."""
    return Settings.model_construct()


def test_default_settings_build_the_default_config_objects() -> None:
    settings = defaults()
    assert settings.store == StoreConfig()
    runtime = settings.runtime_config(environ={})
    assert runtime.docker == DockerConfig()
    local = runtime.local
    assert local.model_copy(update={"hidden_paths": ()}) == LocalConfig()
    assert local.limits == SandboxLimits()
    assert settings.executor == ExecutorConfig()


def test_every_setting_reaches_its_package(tmp_path: Path) -> None:
    settings = Settings.model_construct(
        database_url="postgresql://u:p@db/chronicle",
        data_dir=tmp_path,
        max_event_bytes=2 * MIB,
        blob_threshold_bytes=4096,
        pool_min_size=0,
        pool_max_size=3,
        poll_interval=0.25,
        database_statement_timeout=12.5,
        runtime="docker",
        sandbox_network=True,
        sandbox_env=["NAMED", "ABSENT"],
        sandbox_base_image="debian:bookworm",
        sandbox_cpus=0.5,
        sandbox_memory="512m",
        sandbox_pids_limit=77,
        sandbox_uid=20002,
        sandbox_disk_quota=None,
        sandbox_tmpfs_size="8m",
        sandbox_ready_timeout=9.0,
        sandbox_no_output_timeout=1.5,
        action_timeouts={"run": 5.0},
        sandbox_pool_size=2,
        sandbox_heartbeat_interval=4.0,
        sandbox_max_restarts=1,
        sandbox_file_size_limit=None,
        sandbox_cpu_seconds=9,
        sandbox_workspace_limit_mb=64,
    )
    environ = {"NAMED": "value", "OTHER": "not passed"}
    assert settings.store == StoreConfig(
        max_event_bytes=2 * MIB,
        blob_threshold_bytes=4096,
        pool_min_size=0,
        pool_max_size=3,
        poll_interval=0.25,
        statement_timeout=12.5,
    )
    assert settings.store.long_running().statement_timeout == 0  # no limit
    assert settings.database_config() == DatabaseConfig(
        database_url="postgresql://u:p@db/chronicle", data_dir=tmp_path
    )
    runtime = settings.runtime_config(environ)
    assert (runtime.kind, runtime.pool_size, runtime.ready_timeout) == ("docker", 2, 9.0)
    assert runtime.workspaces_dir == tmp_path / "workspaces"
    assert runtime.docker == DockerConfig(
        base_image="debian:bookworm",
        network=True,
        env={"NAMED": "value"},
        no_output_timeout=1.5,
        cpus=0.5,
        memory="512m",
        pids_limit=77,
        uid=20002,
        disk_quota=None,
        tmpfs_size="8m",
        heartbeat_interval=4.0,
        workspace_limit_mb=64,
    )
    assert runtime.local == LocalConfig(
        network=True,
        env={"NAMED": "value"},
        no_output_timeout=1.5,
        limits=SandboxLimits(
            processes=77,
            memory_bytes=512 * MIB,
            file_size_bytes=None,
            cpu_seconds=9,
            workspace_mb=64,
        ),
        hidden_paths=(default_config_file(), tmp_path),
        uid=20002,
    )
    assert settings.executor == ExecutorConfig(
        action_timeouts={"run": 5.0}, heartbeat_interval=4.0, ready_timeout=9.0, max_restarts=1
    )


def test_a_sandbox_config_never_shows_the_values_it_passes_in() -> None:
    runtime = defaults().runtime_config(environ={"GITHUB_TOKEN": "ghp_secret_value_123"})
    config, local = runtime.docker, runtime.local
    for made in (config, local):
        assert "ghp_secret" not in repr(made) and "ghp_secret" not in str(made)


def test_llm_config_takes_overrides_and_needs_a_model(tmp_path: Path) -> None:
    with pytest.raises(LlmNotConfiguredError, match="CHRONICLE_LLM_MODEL"):
        Settings.model_construct(llm_model=None).llm.config()
    settings = Settings.model_construct(
        llm_model="openai/x", llm_temperature=0.5, llm_max_output_tokens=99, llm_retries=2
    )
    made = settings.llm.config(base_url="http://h/v1", model=None, api_key="sk-override-123")
    assert (made.model, made.base_url, made.temperature) == ("openai/x", "http://h/v1", 0.5)
    assert (made.max_output_tokens, made.retries) == (99, 2)
    assert made.api_key is not None and made.api_key.get_secret_value() == "sk-override-123"


def test_a_sandbox_setting_reaches_every_field_it_names() -> None:
    """One flat name sets the local and the Docker sandbox's field alike (and the executor's):
    a value set reaches every one of them (that their defaults agree:
    tests/unit/test_settings_names.py)."""
    settings = Settings(sandbox_uid=12345, sandbox_heartbeat_interval=7.0, sandbox_pids_limit=99)
    runtime = settings.runtime_config(environ={})
    assert runtime.docker.uid == runtime.local.uid == 12345
    assert runtime.docker.heartbeat_interval == settings.executor.heartbeat_interval == 7.0
    assert runtime.docker.pids_limit == runtime.local.limits.processes == 99
