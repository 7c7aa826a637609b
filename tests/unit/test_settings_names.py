"""Each setting is declared once, on its component's config, and the settings hold those configs
nested (``settings.llm.temperature``); the flat names of before keep working everywhere a
setting is given: ``CHRONICLE_LLM_TEMPERATURE``, a TOML ``llm_temperature``, a TOML ``[llm]``
table's ``temperature`` and ``Settings(llm_temperature=...)`` reach the same field, and a name
that is none is an error naming what the user wrote."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app.config import Settings, flat_names

#: (flat name, a value that is not its default, the nested field it reaches, the value as TOML
#: writes it, as the environment does)
SAMPLES: list[tuple[str, Any, tuple[str, ...], str, str]] = [
    ("llm_temperature", 0.25, ("llm", "temperature"), "0.25", "0.25"),
    ("llm_model", "openai/sampled", ("llm", "model"), '"openai/sampled"', "openai/sampled"),
    ("llm_direct_calls", False, ("llm", "direct_calls"), "false", "false"),
    ("llm_max_output_tokens", 77, ("llm", "max_output_tokens"), "77", "77"),
    ("pool_max_size", 3, ("store", "pool_max_size"), "3", "3"),
    ("database_statement_timeout", 12.5, ("store", "statement_timeout"), "12.5", "12.5"),
    ("projections_batch_size", 9, ("projections", "batch_size"), "9", "9"),
    ("worker_drain_timeout", 5.0, ("worker", "drain_timeout"), "5.0", "5"),
    ("server_rate_limit", 60, ("server", "rate_limit"), "60", "60"),
    ("server_secure_cookies", True, ("server", "secure_cookies"), "true", "true"),
    (
        "workspace_roots",
        [Path("/srv/repos"), Path("/home/me/src")],
        ("server", "workspace_roots"),
        '["/srv/repos", "/home/me/src"]',
        f"/srv/repos{os.pathsep}/home/me/src",
    ),
    ("gateway_rate_limit", 60, ("gateway", "rate_limit"), "60", "60"),
    (
        "gateway_models",
        ["gpt-4o", "claude-*"],
        ("gateway", "models"),
        '["gpt-4o", "claude-*"]',
        "gpt-4o,claude-*",
    ),
    ("runtime", "docker", ("sandbox", "kind"), '"docker"', "docker"),
    ("sandbox_cpus", 0.5, ("sandbox", "docker", "cpus"), "0.5", "0.5"),
    ("sandbox_pool_size", 2, ("sandbox", "pool_size"), "2", "2"),
    ("sandbox_cpu_seconds", 9, ("sandbox", "local", "limits", "cpu_seconds"), "9", "9"),
    ("sandbox_max_restarts", 1, ("executor", "max_restarts"), "1", "1"),
    ("action_timeouts", {"run": 5.0}, ("executor", "action_timeouts"), "{run = 5.0}", '{"run": 5}'),
    (
        "gateway_model_map",
        {"*": "openai/x"},
        ("gateway", "model_map"),
        '{"*" = "openai/x"}',
        '{"*": "openai/x"}',
    ),
]
IDS = [sample[0] for sample in SAMPLES]


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty settings file and an environment without ``CHRONICLE_*`` settings."""
    for name in list(os.environ):
        if name.startswith("CHRONICLE_"):
            monkeypatch.delenv(name)
    path = tmp_path / "config.toml"
    path.write_text("")
    monkeypatch.setenv("CHRONICLE_CONFIG", str(path))
    return path


def reached(settings: Settings, path: tuple[str, ...]) -> Any:
    value: Any = settings
    for part in path:
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(("flat", "value", "path", "toml", "env"), SAMPLES, ids=IDS)
def test_a_flat_env_name_reaches_the_nested_field(
    config_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    flat: str,
    value: Any,
    path: tuple[str, ...],
    toml: str,
    env: str,
) -> None:
    assert reached(Settings(), path) != value  # the sample is no default
    monkeypatch.setenv(f"CHRONICLE_{flat.upper()}", env)
    assert reached(Settings(), path) == value


@pytest.mark.parametrize(("flat", "value", "path", "toml", "env"), SAMPLES, ids=IDS)
def test_a_flat_toml_key_and_a_nested_table_reach_the_nested_field(
    config_file: Path, flat: str, value: Any, path: tuple[str, ...], toml: str, env: str
) -> None:
    config_file.write_text(f"{flat} = {toml}\n")
    assert reached(Settings(), path) == value
    *tables, key = path
    config_file.write_text(f"[{'.'.join(tables)}]\n{key} = {toml}\n")
    assert reached(Settings(), path) == value


@pytest.mark.parametrize(("flat", "value", "path", "toml", "env"), SAMPLES, ids=IDS)
def test_a_flat_argument_reaches_the_nested_field_however_the_settings_are_made(
    config_file: Path, flat: str, value: Any, path: tuple[str, ...], toml: str, env: str
) -> None:
    assert reached(Settings(**{flat: value}), path) == value
    assert reached(Settings.model_validate({flat: value}), path) == value
    assert reached(Settings.model_construct(**{flat: value}), path) == value
    assert reached(Settings().model_copy(update={flat: value}), path) == value


def test_the_environment_wins_over_the_file_whichever_form_the_file_uses(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file.write_text("[llm]\ntemperature = 0.5\nretries = 1\n")
    monkeypatch.setenv("CHRONICLE_LLM_TEMPERATURE", "0.75")
    settings = Settings()
    assert (settings.llm.temperature, settings.llm.retries) == (0.75, 1)
    assert Settings(llm_retries=4).llm.retries == 4  # and the arguments over both


def test_an_unknown_name_is_an_error_naming_it(config_file: Path) -> None:
    with pytest.raises(ValidationError, match=r"llm_temprature is no setting \(did you mean "):
        Settings(llm_temprature=0.5)
    with pytest.raises(ValidationError, match="no_such_setting is no setting") as caught:
        Settings(no_such_setting=1)
    with pytest.raises(ValueError, match="no such setting: llm_temprature"):
        Settings().model_copy(update={"llm_temprature": 0.5})
    with pytest.raises(ValueError, match="has no setting temprature"):
        Settings().model_copy(update={"llm": {"temprature": 0.5}})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted") as caught:
        Settings(llm={"temprature": 0.5})
    assert [flat_names().location(e["loc"]) for e in caught.value.errors()] == ["llm.temprature"]


def test_an_unknown_toml_key_or_table_key_is_an_error(config_file: Path) -> None:
    config_file.write_text("llm_temprature = 0.5\n")
    with pytest.raises(ValidationError, match="llm_temprature is no setting"):
        Settings()
    config_file.write_text("[llm]\ntemprature = 0.5\n")
    with pytest.raises(ValidationError, match="temprature"):
        Settings()


def test_a_bad_value_is_reported_under_the_flat_name(config_file: Path) -> None:
    """A nested field's error names the setting as the user writes it (``llm_temperature``,
    also ``CHRONICLE_LLM_TEMPERATURE``), not as ``llm.temperature``."""
    for given in ({"llm_temperature": -1}, {"llm": {"temperature": -1}}):
        with pytest.raises(ValidationError) as caught:
            Settings(**given)
        assert [flat_names().location(e["loc"]) for e in caught.value.errors()] == [
            "llm_temperature"
        ]


#: (flat name, value, every field it sets, the value each then holds)
SHARED: list[tuple[str, Any, list[tuple[str, ...]], list[Any]]] = [
    (
        "sandbox_network",
        True,
        [("sandbox", "local", "network"), ("sandbox", "docker", "network")],
        [True, True],
    ),
    (
        "sandbox_memory",
        "512m",
        [("sandbox", "local", "limits", "memory_bytes"), ("sandbox", "docker", "memory")],
        [512 * 1024**2, "512m"],
    ),
    (
        "sandbox_pids_limit",
        77,
        [("sandbox", "local", "limits", "processes"), ("sandbox", "docker", "pids_limit")],
        [77, 77],
    ),
    (
        "sandbox_ready_timeout",
        9.0,
        [("sandbox", "ready_timeout"), ("executor", "ready_timeout")],
        [9.0, 9.0],
    ),
    (
        "sandbox_file_size_limit",
        "",
        [("sandbox", "local", "limits", "file_size_bytes")],
        [None],
    ),
]


@pytest.mark.parametrize(("flat", "value", "paths", "held"), SHARED, ids=[s[0] for s in SHARED])
def test_a_flat_name_of_several_fields_sets_each(
    config_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    flat: str,
    value: Any,
    paths: list[tuple[str, ...]],
    held: list[Any],
) -> None:
    """One name for the local and the Docker sandbox's field (and the executor's), in the
    notation of before (``sandbox_memory = "512m"`` is also the local sandbox's bytes); the
    nested forms name each field on its own."""
    assert sorted(flat_names().paths[flat]) == sorted(paths)
    monkeypatch.setenv(f"CHRONICLE_{flat.upper()}", str(value).lower())
    from_env = Settings()
    from_args = Settings(**{flat: value})
    for path, expected in zip(paths, held, strict=True):
        assert reached(from_env, path) == reached(from_args, path) == expected


def test_every_flat_name_is_one_setting_and_its_fields_default_alike() -> None:
    """No flat name is also a top-level setting or a group, and setting one to the default of
    a field it sets (in the notation the others take: ``sandbox_memory`` is Docker's ``4g``)
    changes none of the others (the defaults agree)."""
    names = flat_names()
    assert not set(names.paths) & set(names.top)
    assert not set(names.paths) & set(names.groups)
    defaults = Settings.model_construct()
    for flat, paths in names.paths.items():
        agree = []
        for path in paths:
            try:
                agree.append(Settings.model_construct(**{flat: reached(defaults, path)}))
            except ValidationError:
                continue  # a default in a notation another field does not take
        assert agree and all(made == defaults for made in agree), flat


def test_the_command_line_names_a_bad_setting_as_the_user_wrote_it(config_file: Path) -> None:
    """``chronicle``'s one sentence names the flat name (also the env name without
    ``CHRONICLE_``), whichever form the file used, and a near miss's likely meaning."""
    from app.cli import ConfigurationError, load_settings

    config_file.write_text("[llm]\ntemperature = -1\n")
    with pytest.raises(ConfigurationError, match=r"\(llm_temperature: Input should be greater"):
        load_settings()
    config_file.write_text("sandbox_cpu = 1\n")
    with pytest.raises(ConfigurationError, match=r"sandbox_cpu is no setting \(did you mean "):
        load_settings()
