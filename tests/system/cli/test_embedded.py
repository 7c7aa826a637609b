"""With no database URL, Chronicle starts an embedded PostgreSQL once and reuses it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psycopg
import pytest

from app.store.embedded import EmbeddedPostgres
from app.store.migrate import head_revision
from tests.support.cli import empty_settings_file
from tests.support.forked import chronicle_run


@pytest.mark.slow
def test_db_up_starts_migrates_and_reuses_embedded_server(tmp_path: Path, data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CHRONICLE_DATABASE_URL"}
    env["CHRONICLE_DATA_DIR"] = str(data_dir)  # not under tmp_path: see data_dir's doc
    env["CHRONICLE_CONFIG"] = str(empty_settings_file(tmp_path))

    def chronicle(*args: str) -> subprocess.CompletedProcess:
        return chronicle_run(
            list(args), env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

    server = EmbeddedPostgres(data_dir)
    try:
        assert chronicle("db", "status").returncode == 1  # not created yet
        up = chronicle("db", "up")
        assert up.returncode == 0, up.stderr
        assert "embedded" in up.stdout and f"revision: {head_revision()}" in up.stdout
        pid = server.status().pid
        assert pid is not None
        demo = chronicle("demo")  # reuses the running server
        assert demo.returncode == 0, demo.stderr
        assert server.status().pid == pid
        status = chronicle("db", "status")
        assert status.returncode == 0 and f"pid {pid}" in status.stdout
        assert "role: chronicle_app (chronicle_app: append and read only)" in status.stdout
        url = chronicle("db", "url").stdout.strip()
        assert url.startswith("postgresql://chronicle_app:***@") and str(server.pgdata) in url
        shown = chronicle("db", "url", "--show-password").stdout.strip()
        assert shown == server.status().url and "***" not in shown
        with psycopg.connect(shown) as connection:
            assert connection.execute("SELECT current_user").fetchone() == ("chronicle_app",)
        admin = chronicle("db", "url", "--admin", "--show-password").stdout.strip()
        with psycopg.connect(admin) as connection:
            assert connection.execute("SELECT current_user").fetchone() == ("postgres",)
        printed = chronicle("db", "status").stdout + up.stdout + url
        for secret in (server.superuser_password_file, server.app_password_file):
            assert secret.read_text().strip() not in printed
        assert chronicle("db", "stop").returncode == 0
        assert not server.status().running
        again = chronicle("demo")  # any command that needs the database starts it again
        assert again.returncode == 0, again.stderr
        assert server.status().running
    finally:
        server.stop()
