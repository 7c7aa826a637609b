"""`chronicle sql`, `chronicle export`, `chronicle import` and `chronicle verify --file` as a
team lead and an operator run them: subprocesses on real PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import psycopg
import pyarrow.parquet
import pytest

from tests.support.cli import chronicle, cli_environment, demo_session, empty_settings_file
from tests.support.postgres import ServerAddress, database_from_template

TOOL_QUERY = "SELECT tool, command, exit_code, timed_out FROM tool_calls ORDER BY session_id, seq"


@pytest.fixture
def env(app_database_url: str, analyst_database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **cli_environment(app_database_url, tmp_path),
        "CHRONICLE_ANALYST_DATABASE_URL": analyst_database_url,
    }


@pytest.fixture
def other_database_url(pg_address: ServerAddress, pg_template: str) -> Iterator[str]:
    """Another fresh database, as its owner: where `chronicle import` loads."""
    yield from database_from_template(pg_address, pg_template, f"t_{uuid.uuid4().hex[:16]}")


def _portable(line: str) -> dict[str, object]:
    event = json.loads(line)
    del event["global_position"], event["tx"]
    return event


def test_sql_prints_a_table_csv_and_json(env: dict[str, str]) -> None:
    demo_session(env), demo_session(env)
    table = chronicle("sql", TOOL_QUERY, env=env)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines() == [
        " tool | command    | exit_code | timed_out",
        "------+------------+-----------+-----------",
        " run  | ls | wc -l |         0 | false",
        " run  | ls | wc -l |         0 | false",
        "(2 rows)",
    ]
    as_csv = chronicle("sql", "--csv", TOOL_QUERY, env=env)
    assert as_csv.returncode == 0, as_csv.stderr
    assert list(csv.reader(io.StringIO(as_csv.stdout))) == [
        ["tool", "command", "exit_code", "timed_out"],
        ["run", "ls | wc -l", "0", "false"],
        ["run", "ls | wc -l", "0", "false"],
    ]
    as_json = chronicle("sql", "--json", "SELECT * FROM session_costs ORDER BY created_at", env=env)
    assert as_json.returncode == 0, as_json.stderr
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [row["title"] for row in rows] == ["demo: a recorded session"] * 2
    assert rows[0]["events"] == 8 and rows[0]["models"] == [] and rows[0]["cost_usd"] is None
    datetime.fromisoformat(rows[0]["created_at"])
    empty = chronicle("sql", "--csv", "SELECT 1 AS one WHERE false", env=env)
    assert empty.stdout == "one\n"


def test_sql_sees_session_state_right_after_a_run(env: dict[str, str]) -> None:
    """No runner is live: `chronicle sql` brings session_state up to date before it reads."""
    session = demo_session(env)
    found = chronicle(
        "sql", "--json", "SELECT session_id, title, last_seq FROM session_state", env=env
    )
    assert found.returncode == 0, found.stderr
    assert [json.loads(line) for line in found.stdout.splitlines()] == [
        {"session_id": session, "title": "demo: a recorded session", "last_seq": 8}
    ]


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("DELETE FROM session_state", "queries here only read"),
        ("SELECT * FROM events", "permission denied for table events"),
        ("SELECT * FROM llm_messages", "permission denied"),
        ("SELECT 1; SELECT 2", "one SQL statement"),
        ("SELEC 1", "the query failed: syntax error"),
        ("SELECT pg_sleep(5)", "longer than its 0.5 s limit"),
    ],
)
def test_sql_refusals_say_why(env: dict[str, str], query: str, said: str) -> None:
    refused = chronicle("sql", "--timeout", "0.5", query, env=env)
    assert refused.returncode == 1
    assert said in refused.stderr and "Traceback" not in refused.stderr


def test_sql_url_and_a_missing_analyst_login(
    env: dict[str, str], analyst_database_url: str
) -> None:
    printed = chronicle("sql", "--url", env=env)
    assert printed.returncode == 0, printed.stderr
    url = printed.stdout.strip()
    assert url == analyst_database_url
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT count(*) FROM daily_usage").fetchone() == (0,)
    without = {k: v for k, v in env.items() if k != "CHRONICLE_ANALYST_DATABASE_URL"}
    missing = chronicle("sql", "SELECT 1", env=without)
    assert missing.returncode == 1
    assert "set CHRONICLE_ANALYST_DATABASE_URL" in missing.stderr
    # The application's login is not an analyst's: it could write.
    app = {**env, "CHRONICLE_ANALYST_DATABASE_URL": env["CHRONICLE_DATABASE_URL"]}
    refused = chronicle("sql", "SELECT 1", env=app)
    assert refused.returncode == 1 and "a member of chronicle_app" in refused.stderr


def test_export_verify_import_and_a_tampered_file(
    env: dict[str, str], other_database_url: str, tmp_path: Path
) -> None:
    first, second = demo_session(env), demo_session(env)
    archive = tmp_path / "archive.jsonl"
    exported = chronicle("export", first, second, "-o", str(archive), env=env)
    assert exported.returncode == 0, exported.stderr
    assert "exported 2 sessions, 16 events" in exported.stderr

    offline = {**os.environ, "CHRONICLE_CONFIG": str(empty_settings_file(tmp_path)),
               "CHRONICLE_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # fmt: skip
    verified = chronicle("verify", "--file", str(archive), env=offline)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{first}  ok: 8 events" in verified.stdout

    other = {**env, "CHRONICLE_DATABASE_URL": other_database_url}
    loaded = chronicle("import", str(archive), env=other)
    assert loaded.returncode == 0, loaded.stderr
    assert "imported 2 sessions: 16 events written, 0 already present" in loaded.stdout
    again = chronicle("import", str(archive), env=other)
    assert "0 events written, 16 already present" in again.stdout
    assert chronicle("verify", "--all", env=other).returncode == 0
    copied = chronicle("events", first, "--json", env=other)
    original = chronicle("events", first, "--json", env=env)
    # The same events; global_position and tx are each database's own.
    assert [_portable(line) for line in copied.stdout.splitlines()] == [
        _portable(line) for line in original.stdout.splitlines()
    ]

    lines = archive.read_text().splitlines()
    number = next(i for i, text in enumerate(lines) if '"kind":"run.output"' in text) + 1
    lines[number - 1] = lines[number - 1].replace('"output":"3\\n"', '"output":"300\\n"')
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    broken = chronicle("verify", "--file", str(tampered), env=offline)
    assert broken.returncode == 1
    assert f"BROKEN at line {number}: event 5 of session {first}" in broken.stdout
    refused = chronicle("import", str(tampered), env=other)
    assert refused.returncode == 1
    assert f"line {number}" in refused.stderr and "nothing was imported" in refused.stderr

    app_login = chronicle("import", str(archive), env=env)
    assert app_login.returncode == 1 and "only the owner" in app_login.stderr


def test_export_a_view_as_csv_and_parquet_round_trips(env: dict[str, str], tmp_path: Path) -> None:
    demo_session(env), demo_session(env)
    rows = [
        json.loads(line)
        for line in chronicle(
            "sql", "--json", "SELECT * FROM tool_calls ORDER BY created_at, session_id, seq",
            env=env,
        ).stdout.splitlines()
    ]  # fmt: skip
    assert len(rows) == 2

    as_csv = tmp_path / "tools.csv"
    written = chronicle("export", "--view", "tool_calls", "--format", "csv", "-o", str(as_csv),
                        env=env)  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert "2 rows of tool_calls" in written.stderr
    with as_csv.open(newline="") as file:
        read = list(csv.DictReader(file))
    assert [row["session_id"] for row in read] == [row["session_id"] for row in rows]
    assert [row["command"] for row in read] == ["ls | wc -l"] * 2
    assert [float(row["duration_ms"]) for row in read] == [row["duration_ms"] for row in rows]
    assert [datetime.fromisoformat(row["created_at"]) for row in read] == [
        datetime.fromisoformat(row["created_at"]) for row in rows
    ]

    as_parquet = tmp_path / "tools.parquet"
    written = chronicle("export", "--view", "tool_calls", "--format", "parquet",
                        "-o", str(as_parquet), env=env)  # fmt: skip
    assert written.returncode == 0, written.stderr
    table = pyarrow.parquet.read_table(as_parquet)
    assert str(table.schema.field("created_at").type) == "timestamp[us, tz=UTC]"
    assert str(table.schema.field("exit_code").type) == "int32"
    assert str(table.schema.field("timed_out").type) == "bool"
    back = table.to_pylist()
    assert [str(row["session_id"]) for row in back] == [row["session_id"] for row in rows]
    assert [row["created_at"] for row in back] == [
        datetime.fromisoformat(row["created_at"]) for row in rows
    ]
    assert [row["duration_ms"] for row in back] == [row["duration_ms"] for row in rows]
    assert [row["exit_code"] for row in back] == [0, 0]

    later = chronicle("export", "--view", "daily_usage", "--since", "2999-01-01", env=env)
    assert later.returncode == 0 and later.stdout.startswith("day,gen_ai_request_model,")
    assert later.stdout.count("\n") == 1
    unknown = chronicle("export", "--view", "events", "-o", str(as_csv), env=env)
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr


def test_the_embedded_server_has_an_analyst_login(data_dir: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CHRONICLE_DATA_DIR": str(data_dir),
        "CHRONICLE_CONFIG": str(empty_settings_file(tmp_path)),
    }
    env.pop("CHRONICLE_DATABASE_URL", None)
    env.pop("CHRONICLE_ANALYST_DATABASE_URL", None)
    session = demo_session(env)
    found = chronicle("sql", "--csv", "SELECT session_id, title FROM session_state", env=env,
                      timeout=120)  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[1] == f"{session},demo: a recorded session"
    password = data_dir / "secrets" / "postgres-chronicle_analyst.password"
    assert stat.S_IMODE(password.stat().st_mode) == 0o600
    url = chronicle("sql", "--url", env=env).stdout.strip()
    assert url.startswith("postgresql://chronicle_analyst:")
    with psycopg.connect(url) as connection:
        # psql and BI tools get read-only transactions by default too.
        assert connection.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("SELECT * FROM events")


def test_export_from_one_embedded_server_and_import_into_another(
    data_dir: Path, tmp_path: Path
) -> None:
    """Without any URL: export reads as the application, import writes as the embedded
    server's owner (superuser), each server started on demand."""
    base = {**os.environ, "CHRONICLE_CONFIG": str(empty_settings_file(tmp_path))}
    base.pop("CHRONICLE_DATABASE_URL", None)
    here = {**base, "CHRONICLE_DATA_DIR": str(data_dir)}
    there = {**base, "CHRONICLE_DATA_DIR": str(data_dir.parent / "other" / "data")}
    session = demo_session(here)
    archive = tmp_path / "one.jsonl"
    assert chronicle("export", session, "-o", str(archive), env=here, timeout=120).returncode == 0
    loaded = chronicle("import", str(archive), env=there, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert "8 events written" in loaded.stdout
    verified = chronicle("verify", session, env=there)
    assert verified.returncode == 0 and "8 events" in verified.stdout
