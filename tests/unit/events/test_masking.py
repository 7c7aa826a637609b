"""Secret masking as pure code: which values count as secrets, and how they are replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.config import Settings
from app.events.canonical import canonicalise
from app.events.masking import (
    SecretMasker,
    environment_secrets,
    mask_url,
    placeholder,
    url_secrets,
)
from app.store.append import encode_batch

KEY = "sk-live-0123456789abcdef"


def test_masks_every_occurrence_with_the_secret_name() -> None:
    masker = SecretMasker({KEY: "CHRONICLE_LLM_API_KEY"})
    text = f"export KEY={KEY}; echo {KEY}{KEY}"
    masked = masker.mask_text(text)
    assert KEY not in masked
    assert masked.count(placeholder("CHRONICLE_LLM_API_KEY")) == 3


def test_longest_secret_wins_when_one_contains_another() -> None:
    masker = SecretMasker({"abcdefgh": "SHORT_TOKEN", "abcdefgh-ijklmnop": "LONG_TOKEN"})
    assert masker.mask_text("x abcdefgh-ijklmnop y") == "x [secret LONG_TOKEN] y"


def test_short_and_trivial_values_are_not_secrets() -> None:
    found = environment_secrets(
        {"MAX_TOKENS": "4096", "USE_KEYRING": "true", "API_KEY": "short", "KEY_FILE": "/etc/k/k"}
    )
    masker = SecretMasker(found)
    assert masker.names == []
    assert masker.mask_text("4096 true short /etc/k/k") == "4096 true short /etc/k/k"


def test_environment_names_and_url_credentials() -> None:
    found = environment_secrets(
        {
            "OPENAI_API_KEY": "sk-aaaaaaaaaaaa",
            "GITHUB_TOKEN": "ghp_bbbbbbbbbbbbbbbb",
            "DB_PASSWORD": "correct horse battery",
            "AWS_SECRET_ACCESS_KEY": "cccccccccccccccccccc",
            "PATH": "/usr/bin",
            "MIRROR": "https://user:p%40ssw0rd-9@mirror.example/simple",
        }
    )
    assert found["sk-aaaaaaaaaaaa"] == "OPENAI_API_KEY"
    assert found["ghp_bbbbbbbbbbbbbbbb"] == "GITHUB_TOKEN"
    assert found["correct horse battery"] == "DB_PASSWORD"
    assert found["cccccccccccccccccccc"] == "AWS_SECRET_ACCESS_KEY"
    assert found["p@ssw0rd-9"] == "MIRROR password"  # as it would be typed
    assert found["p%40ssw0rd-9"] == "MIRROR password"  # as it is written in the URL
    assert "/usr/bin" not in found


def test_token_as_url_user_name() -> None:
    assert url_secrets("REPO", "https://ghp_t0kent0kent0ken0000@github.example/x.git") == {
        "ghp_t0kent0kent0ken0000": "REPO credentials"
    }
    assert url_secrets("DB", "postgresql://chronicle@db/chronicle") == {}
    assert url_secrets("DB", None) == {}


def test_masks_inside_json_values_and_keys() -> None:
    masker = SecretMasker({KEY: "K", 'quo"te\\secret': "Q"})
    value = {"a": [KEY, {"b": f"x{KEY}x"}], KEY: 1, "n": 5, "q": 'say quo"te\\secret'}
    masked = masker.mask_value(value)
    assert KEY not in json.dumps(masked)
    assert masked["a"][1]["b"] == "x[secret K]x"
    assert masked["[secret K]"] == 1
    assert masked["n"] == 5
    assert masked["q"] == "say [secret Q]"
    # The cheap JSON test sees secrets in their escaped form too.
    assert masker.leaks_into_json(canonicalise(value)[1])
    assert not masker.leaks_into_json(canonicalise(masked)[1])


def test_settings_know_the_key_the_urls_and_mcp_environments(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        llm_api_key=KEY,
        database_url="postgresql://app:db-pass-123456@db.internal/chronicle",
        llm_base_url="https://proxy-user:proxy-pass-9876@llm.internal/v1",
        mcp_servers=[
            {"name": "gh", "command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_xxxxxxxxxxxxx"}}
        ],
    )
    found = settings.known_secrets({"SOME_SECRET": "s3cr3t-value-1"})
    assert found[KEY] == "CHRONICLE_LLM_API_KEY"
    assert found["db-pass-123456"] == "CHRONICLE_DATABASE_URL password"
    assert found["proxy-pass-9876"] == "CHRONICLE_LLM_BASE_URL password"
    assert found["ghp_xxxxxxxxxxxxx"] == "mcp_servers.gh.env.GITHUB_TOKEN"
    assert found["s3cr3t-value-1"] == "SOME_SECRET"


def test_key_file_fills_the_key(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    settings = Settings(data_dir=tmp_path, llm_api_key_file=key_file)
    assert settings.llm.api_key is not None
    assert settings.llm.api_key.get_secret_value() == KEY
    assert settings.known_secrets({})[KEY] == "CHRONICLE_LLM_API_KEY"
    with pytest.raises(ValidationError, match="cannot read the key file"):
        Settings(data_dir=tmp_path, llm_api_key_file=tmp_path / "missing")


def test_only_named_variables_reach_the_sandbox(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, sandbox_env=["PROJECT_MODE", "NOT_SET_ANYWHERE"])
    environ = {"PROJECT_MODE": "ci", "OPENAI_API_KEY": "sk-aaaaaaaaaaaa"}
    assert settings.sandbox_environment(environ) == {"PROJECT_MODE": "ci"}


def test_the_log_door_masks_before_hashing() -> None:
    masker = SecretMasker({KEY: "CHRONICLE_LLM_API_KEY"})
    batch = encode_batch(
        [
            {"kind": "run.output", "output": f"key={KEY}\n", "exit_code": 0, "cause": 1},
            {"kind": "message", "content": "nothing secret here"},
        ],
        1 << 20,
        masker,
    )
    assert KEY not in batch.payload_texts[0]
    assert "[secret CHRONICLE_LLM_API_KEY]" in batch.payloads[0]["output"]
    assert batch.payload_texts[0] == canonicalise(batch.payloads[0])[1]
    assert batch.payloads[1]["content"] == "nothing secret here"


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("http://user:pw@host/v1", "http://user:[secret url password]@host/v1"),
        (
            "https://proxy:s%40cret-1@llm.internal:8443/v1?api-version=2024&api_key=abc#x",
            "https://proxy:[secret url password]@llm.internal:8443/v1"
            "?api-version=2024&api_key=[secret url api_key]#x",
        ),
        (
            "https://ghp_t0kent0kent0ken0000@git.example/x.git",
            "https://[secret url credentials]@git.example/x.git",
        ),
        (
            "https://h/x?key=K&token=T&max_tokens=9&monkey=1",
            "https://h/x?key=[secret url key]&token=[secret url token]&max_tokens=9&monkey=1",
        ),
        (
            "https://s3.example/o?X-Amz-Signature=ab12&X-Amz-Date=1",
            "https://s3.example/o?X-Amz-Signature=[secret url X-Amz-Signature]&X-Amz-Date=1",
        ),
        ("postgresql://chronicle@db/chronicle", "postgresql://chronicle@db/chronicle"),
        ("https://example.com/users/@me?page=2", "https://example.com/users/@me?page=2"),
    ],
)
def test_credentials_in_any_url_are_masked(url: str, masked: str) -> None:
    assert mask_url(url) == masked
    assert mask_url(masked) == masked  # masking twice changes nothing


def test_a_masker_without_known_secrets_still_masks_urls_in_text_and_json() -> None:
    masker = SecretMasker()
    assert masker.names == []
    value = {"base_url": "http://u:hunter2@llm.local/v1", "out": "curl 'https://h/x?token=t0k'"}
    text = canonicalise(value)[1]
    assert masker.leaks_into_json(text)
    masked = masker.mask_value(value)
    assert "hunter2" not in json.dumps(masked) and "t0k" not in json.dumps(masked)
    assert masked["base_url"] == "http://u:[secret url password]@llm.local/v1"
    assert not masker.leaks_into_json(canonicalise(masked)[1])
    assert not masker.leaks_into_json(canonicalise({"see": "https://docs.example/a?b=c"})[1])


def test_a_known_url_password_keeps_its_name() -> None:
    masker = SecretMasker(url_secrets("CHRONICLE_LLM_BASE_URL", "http://u:long-pass-123@h/v1"))
    assert masker.mask_text("http://u:long-pass-123@h/v1") == (
        "http://u:[secret CHRONICLE_LLM_BASE_URL password]@h/v1"
    )
