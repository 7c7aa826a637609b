"""The `chronicle` command as a user runs it: a real subprocess against a real database."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from app.config import Settings
from tests.support.cli import chronicle, cli_environment


@pytest.fixture
def env(app_database_url: str, tmp_path: Path) -> dict[str, str]:
    """The command as the application runs it: configured with chronicle_app's URL."""
    return cli_environment(app_database_url, tmp_path)


def test_demo_then_events_and_verify(env: dict[str, str]) -> None:
    demo = chronicle("demo", env=env)
    assert demo.returncode == 0, demo.stderr
    session = next(w for w in demo.stdout.split() if w.count("-") == 4)
    lines = chronicle("events", session, env=env).stdout.splitlines()
    assert len(lines) == 8 and "$ ls | wc -l" in lines[3] and "←4" in lines[4]
    as_json = [
        json.loads(line)
        for line in chronicle("events", session, "--json", env=env).stdout.splitlines()
    ]
    assert [e["seq"] for e in as_json] == list(range(1, 9))
    assert {
        "session_id",
        "seq",
        "event_id",
        "kind",
        "source",
        "cause",
        "payload",
        "created_at",
        "hash",
    } <= set(as_json[0])
    verified = chronicle("verify", session, env=env)
    assert verified.returncode == 0 and "8 events" in verified.stdout


def test_verify_names_the_first_bad_seq(env: dict[str, str], database_url: str) -> None:
    import psycopg

    session = str(uuid.uuid4())
    for i in range(3):
        assert (
            chronicle(
                "append", session, "message", json.dumps({"content": str(i)}), env=env
            ).returncode
            == 0
        )
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        connection.execute('UPDATE events SET payload = \'{"content": "evil"}\' WHERE seq = 2')
        connection.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")
    result = chronicle("verify", session, env=env)
    assert result.returncode == 1
    assert "BROKEN at seq 2" in result.stdout


def test_follow_prints_new_events_live(env: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    chronicle("append", session, "message", '{"content": "first"}', env=env)
    follower = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "events", session, "--follow", "--json"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert json.loads(follower.stdout.readline())["payload"]["content"] == "first"
        time.sleep(0.3)
        chronicle("append", session, "message", '{"content": "second"}', env=env)
        assert json.loads(follower.stdout.readline())["payload"]["content"] == "second"
    finally:
        follower.terminate()
        follower.wait(10)


def test_errors_are_sentences_not_tracebacks(env: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    bad_kind = chronicle("append", session, "telepathy", env=env)
    assert bad_kind.returncode == 1 and "unknown event kind 'telepathy'" in bad_kind.stderr
    bad_field = chronicle("append", session, "run", '{"timeout": 1}', env=env)
    assert "field 'command'" in bad_field.stderr
    not_json = chronicle("append", session, "message", "{nope", env=env)
    assert not_json.returncode == 2 and "not JSON" in not_json.stderr
    missing = chronicle("events", session, env=env)
    assert missing.returncode == 1 and "has no events" in missing.stderr
    not_uuid = chronicle("events", "abc", env=env)
    assert not_uuid.returncode == 2 and "not a session id" in not_uuid.stderr
    down = chronicle(
        "events", session, env={**env, "CHRONICLE_DATABASE_URL": "postgresql://u@127.0.0.1:1/x"}
    )
    assert down.returncode == 1 and "cannot connect to PostgreSQL" in down.stderr
    bad_setting = chronicle("events", session, env={**env, "CHRONICLE_MAX_EVENT_BYTES": "lots"})
    assert (
        bad_setting.returncode == 2
        and "invalid configuration (max_event_bytes" in bad_setting.stderr
    )
    for result in (bad_kind, bad_field, not_json, missing, not_uuid, down, bad_setting):
        assert "Traceback" not in result.stderr


def test_db_status_and_url_with_a_configured_server(
    env: dict[str, str], app_database_url: str, tmp_path: Path
) -> None:
    status = chronicle("db", "status", env=env)
    assert status.returncode == 0, status.stdout
    assert "configured" in status.stdout and "(head: 0004)" in status.stdout
    assert "(chronicle_app: append and read only)" in status.stdout
    password = urlsplit(app_database_url).password
    assert password and password not in status.stdout
    shown = chronicle("db", "url", env=env).stdout.strip()
    assert shown == app_database_url.replace(password, "***")
    assert chronicle("db", "url", "--show-password", env=env).stdout.strip() == app_database_url
    assert chronicle("demo", env=env).returncode == 0
    assert not (tmp_path / "data").exists(), "with a URL set, no embedded server is started"


def test_settings_come_from_a_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "chronicle.toml"
    config.write_text("max_event_bytes = 4096\npoll_interval = 0.25\n")
    monkeypatch.setenv("CHRONICLE_CONFIG", str(config))
    monkeypatch.setenv("CHRONICLE_POLL_INTERVAL", "0.75")
    settings = Settings()
    assert settings.max_event_bytes == 4096
    assert settings.poll_interval == 0.75  # the environment wins over the file


def test_sessions_lists_the_latest_with_state_and_cost(env: dict[str, str]) -> None:
    assert "no sessions yet" in chronicle("sessions", env=env).stderr
    demo = chronicle("demo", env=env)
    session = next(w for w in demo.stdout.split() if w.count("-") == 4)
    listed = chronicle("sessions", env=env)
    assert listed.returncode == 0 and session in listed.stdout
    assert "finished" in listed.stdout and "demo: a recorded session" in listed.stdout
    [row] = [
        json.loads(line) for line in chronicle("sessions", "--json", env=env).stdout.splitlines()
    ]
    assert row["id"] == session and row["events"] == 8 and row["state"] == "finished"
    assert row["model_calls"] == 0 and row["cost_usd"] == 0
