"""The `chronicle` command as a user runs it: a real subprocess against a real database."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from app.config import Settings
from app.store.migrate import head_revision
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle, cli_environment
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.forked import chronicle_popen


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
    follower = chronicle_popen(
        ["events", session, "--follow", "--json"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # It printed its backlog (only "first"): what is appended now reaches it live.
        assert json.loads(follower.stdout.readline())["payload"]["content"] == "first"
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
    assert "configured" in status.stdout and f"(head: {head_revision()})" in status.stdout
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
    assert settings.store.max_event_bytes == 4096
    assert settings.store.poll_interval == 0.75  # the environment wins over the file


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


# -- the command refuses what a user did not mean -----------------------------------------------


def session_in(output: str) -> str:
    """The first session id a command printed."""
    found = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", output)
    assert found, output
    return found.group()


def test_run_refuses_a_workspace_that_does_not_exist(
    env: dict[str, str], fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done")]))
    agent = agent_environment(fake_llm, app_database_url, tmp_path)
    missing = tmp_path / "no" / "such" / "project"
    refused = chronicle("run", "--workspace", str(missing), "Fix it.", env=agent)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"the workspace {missing} does not exist" in refused.stderr
    assert "--create-workspace" in refused.stderr and "Traceback" not in refused.stderr
    assert not missing.exists() and not fake_llm.requests
    assert "no sessions yet" in chronicle("sessions", env=agent).stderr

    made = chronicle(
        "run", "--workspace", str(missing), "--create-workspace", "Fix it.", env=agent, timeout=120
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert missing.is_dir()

    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    refused = chronicle("run", "--workspace", str(not_a_dir), "Fix it.", env=agent)
    assert refused.returncode == 2 and "is not a directory" in refused.stderr


def test_run_with_the_id_of_an_existing_session_points_to_resume(
    env: dict[str, str], tmp_path: Path
) -> None:
    demo = chronicle("demo", env=env)
    session = session_in(demo.stdout)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    again = chronicle("run", "--workspace", str(workspace), "--session", session, "Go.", env=env)
    assert again.returncode == 2, again.stdout + again.stderr
    assert f"session {session} already exists" in again.stderr
    assert f"chronicle resume {session}" in again.stderr
    assert len(chronicle("events", session, env=env).stdout.splitlines()) == 8


def test_resume_refuses_a_recorded_workspace_that_is_gone(
    fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    fake_llm.script(Reply(content="Which file?"))
    agent = agent_environment(fake_llm, app_database_url, tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    asked = chronicle("run", "--workspace", str(workspace), "Fix the bug.", env=agent, timeout=120)
    assert asked.returncode == 1 and "awaiting_user_input" in asked.stdout, asked.stderr
    session = session_in(asked.stdout)
    workspace.rmdir()
    refused = chronicle("resume", session, "main.py", env=agent)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"the workspace {workspace} does not exist" in refused.stderr
    assert not workspace.exists()


def test_a_malformed_settings_file_is_one_sentence_with_its_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "broken.toml"
    config.write_text('runtime = "local"\nmax_event_bytes = \n')
    result = chronicle("sessions", env={**env, "CHRONICLE_CONFIG": str(config)})
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: the settings file {config} is not valid TOML")
    assert "line 2" in line


def test_a_settings_file_named_but_missing_is_an_error(env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "typo.toml"
    result = chronicle("sessions", env={**env, "CHRONICLE_CONFIG": str(missing)})
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert f"CHRONICLE_CONFIG names {missing}, which does not exist" in line


def test_unknown_cost_shows_as_unknown_and_titles_are_one_line(env: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    title = "Fix the parser\nthen run the tests\nand commit"
    created = json.dumps({"title": title, "config": {}})
    assert chronicle("append", session, "session.created", created, env=env).returncode == 0
    unpriced = json.dumps({"model": "openai/local", "fingerprint": "f"})
    assert chronicle("append", session, "llm.call", unpriced, env=env).returncode == 0
    listed = chronicle("sessions", env=env)
    [line] = listed.stdout.splitlines()
    assert "$0.0000" not in line and "  unknown  " in line
    assert line.endswith("Fix the parser") and "then run" not in listed.stdout
    [row] = [json.loads(x) for x in chronicle("sessions", "--json", env=env).stdout.splitlines()]
    assert row["cost_usd"] is None and row["model_calls"] == 1

    priced = json.dumps({"model": "openai/gpt-4o", "fingerprint": "g", "cost_usd": 0.25})
    assert chronicle("append", session, "llm.call", priced, env=env).returncode == 0
    [line] = chronicle("sessions", env=env).stdout.splitlines()
    assert "≥$0.2500" in line  # one call's price is unknown: at least this much


def test_run_records_a_one_line_title_and_summarises_unknown_cost(
    fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done")]))
    agent = agent_environment(fake_llm, app_database_url, tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    task = "Rename the module " + "x" * 100 + "\n\nDetails: keep the old name as an alias."
    done = chronicle("run", "--workspace", str(workspace), task, env=agent, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    session = session_in(done.stdout)
    created = json.loads(chronicle("events", session, "--json", env=agent).stdout.splitlines()[0])
    title = created["payload"]["title"]
    assert "\n" not in title and title.startswith("Rename the module x")
    assert len(title) <= 80 and title.endswith("…")
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"session {session}: finished")
    assert "1 model call" in summary and "cost unknown" in summary and "$0.0000" not in done.stdout


def test_text_no_terminal_can_encode_prints_as_its_escape(env: dict[str, str]) -> None:
    """A lone surrogate (a file name the model sent) in the log must not end `chronicle events`
    with UnicodeEncodeError; its escape is also what makes `--json` output parse back."""
    session = str(uuid.uuid4())
    appended = chronicle(
        "append", session, "message", '{"content": "caf\\udce9.txt and \\u0000"}', env=env
    )
    assert appended.returncode == 0, appended.stderr
    lines = chronicle("events", session, env=env)
    assert lines.returncode == 0, lines.stderr
    assert "caf\\udce9.txt" in lines.stdout
    as_json = chronicle("events", session, "--json", env=env)
    assert as_json.returncode == 0, as_json.stderr
    [event] = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert event["payload"]["content"] == "caf\udce9.txt and \x00"


def test_cause_zero_is_an_error_on_the_command_line(app_database_url: str, tmp_path: Path) -> None:
    """Before migration 0003 the command silently dropped the cause."""
    env = cli_environment(app_database_url, tmp_path)
    session = str(uuid.uuid4())
    assert chronicle("append", session, "run", '{"command": "ls"}', env=env).returncode == 0
    zero = chronicle("append", session, "run.output", "{}", "--cause", "0", env=env)
    assert zero.returncode == 2 and "0 is not a seq: it goes from 1 to" in zero.stderr
    assert "Traceback" not in zero.stderr
    answered = chronicle(
        "append", session, "run.output", '{"exit_code": 0}', "--cause", "1", env=env
    )
    assert answered.returncode == 0, answered.stderr


def test_no_model_call_costs_nothing_written_as_the_page_writes_it(env: dict[str, str]) -> None:
    """One notation: ``$0`` with no model call (the page's), ``unknown`` with no price."""
    session = str(uuid.uuid4())
    created = json.dumps({"title": "nothing asked", "config": {}})
    assert chronicle("append", session, "session.created", created, env=env).returncode == 0
    [line] = chronicle("sessions", env=env).stdout.splitlines()
    assert re.search(r" 0 calls +\$0  nothing asked$", line), line


def test_help_texts_print_a_percent_sign_once() -> None:
    """argparse formats an option's help with ``%`` but not a description: "95%%" showed."""
    for command in (("eval", "report", "--help"), ("eval", "compare", "--help")):
        shown = chronicle(*command, env=dict(os.environ))
        assert shown.returncode == 0, shown.stderr
        assert "95% interval" in shown.stdout and "%%" not in shown.stdout, shown.stdout


def test_a_unique_prefix_names_a_session_as_the_page_shows_it(env: dict[str, str]) -> None:
    """The page and `chronicle sessions` show 8 characters of an id; every SESSION argument
    takes a unique prefix, and says which sessions an ambiguous one begins."""
    first, second = (f"0badcafe-000{n}-4000-8000-000000000000" for n in (1, 2))
    for session in (first, second):
        added = chronicle("append", session, "message", '{"content": "hi"}', env=env)
        assert added.returncode == 0, added.stderr
    by_prefix = chronicle("events", "0BADCAFE-0002", env=env)
    assert by_prefix.returncode == 0 and "hi" in by_prefix.stdout
    verified = chronicle("verify", "0badcafe0001", env=env)
    assert verified.returncode == 0 and "ok: 1 events" in verified.stdout, verified.stderr
    ambiguous = chronicle("events", "0badcafe", env=env)
    assert ambiguous.returncode == 2
    assert f"0badcafe begins more than one session id ({first}, {second}):" in ambiguous.stderr
    unknown = chronicle("export", "0badbeef", env=env)
    assert unknown.returncode == 2 and "no session id begins with 0badbeef" in unknown.stderr
    for result in (ambiguous, unknown):
        assert "Traceback" not in result.stderr
