"""The embedded PostgreSQL asks every connection for a password and hides its socket.

Before, pgserver's defaults applied: ``initdb --auth=trust``, so anyone who reached the socket
(in the data dir, or in a world-writable runtime directory) was the superuser without a
password; the first test below connected that way. Each test runs a server of its own.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from app.store.embedded import EmbeddedPostgres
from tests.support.postgres import ServerAddress
from tests.support.repository import ROOT

pytestmark = pytest.mark.slow


# Every server's data dir is the `data_dir` fixture's (tests/system/conftest.py), never under
# tmp_path: as root the server runs as pgserver's user, who must pass through the directory's
# parents, and any pytest session starting on the machine makes pytest's temporary root 0700
# again (initdb, pg_ctl and pgserver then failed with "Permission denied" or a missing log).
@pytest.fixture
def server(data_dir: Path) -> Iterator[EmbeddedPostgres]:
    embedded = EmbeddedPostgres(data_dir)
    try:
        yield embedded
    finally:
        embedded.stop()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _refuses_without_password(address: ServerAddress) -> str:
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(address.url("chronicle").replace(f":{address.password}@", "@")).close()
    return str(refused.value)


def test_every_connection_needs_a_password(server: EmbeddedPostgres) -> None:
    urls = server.ensure_running()
    admin, app = ServerAddress.from_url(urls.admin), ServerAddress.from_url(urls.app)
    assert admin.host.startswith("/") and "no password supplied" in _refuses_without_password(admin)
    assert "no password supplied" in _refuses_without_password(app)
    wrong = ServerAddress(app.host, app.port, app.user, "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong.url("chronicle")).close()

    with psycopg.connect(urls.app) as connection:
        row = connection.execute(
            "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert row == ("chronicle_app", False)
    with psycopg.connect(urls.admin) as connection:
        rules = connection.execute(
            "SELECT type, auth_method FROM pg_hba_file_rules WHERE error IS NULL"
        ).fetchall()
    assert rules and all(method in ("scram-sha-256", "reject") for _, method in rules)
    assert ("local", "scram-sha-256") in rules
    assert server.status().url == urls.app


def test_no_tcp_port_and_a_private_socket(server: EmbeddedPostgres) -> None:
    urls = server.ensure_running()
    pid = server.status().pid
    assert pid is not None
    with psycopg.connect(urls.admin) as connection:
        listen = connection.execute("SHOW listen_addresses").fetchone()
    assert listen == ("",)
    tcp = [c for c in psutil.net_connections(kind="inet") if c.pid == pid]
    assert tcp == [], f"the server has TCP sockets: {tcp}"

    socket_dir = Path(ServerAddress.from_url(urls.app).host)
    assert socket_dir == server.pgdata
    info = socket_dir.lstat()
    assert stat.S_ISDIR(info.st_mode) and _mode(socket_dir) == 0o700
    server_uid = psutil.Process(pid).uids().real
    assert info.st_uid == server_uid
    assert _mode(socket_dir / ".s.PGSQL.5432") == 0o700


def test_secrets_and_directories_are_private(server: EmbeddedPostgres) -> None:
    server.ensure_running()
    for secret in (server.superuser_password_file, server.app_password_file):
        assert _mode(secret) == 0o600, secret
        assert secret.lstat().st_uid == os.geteuid()
        assert len(secret.read_text().strip()) >= 40
    assert _mode(server.secrets_dir) == 0o700
    assert _mode(server.pgdata) == 0o700
    if os.geteuid() == 0:
        # The server's own user must pass through the data dir to its directory, no more.
        assert _mode(server.data_dir) == 0o710
        assert server.data_dir.stat().st_gid == server.pgdata.stat().st_gid
    else:
        assert _mode(server.data_dir) == 0o700
    assert server.superuser_password_file.read_text() != server.app_password_file.read_text()


def test_a_long_data_dir_path_gets_a_private_socket_directory(data_dir: Path) -> None:
    server = EmbeddedPostgres(data_dir.parent / ("d" * 100))
    try:
        urls = server.ensure_running()
        socket_dir = Path(ServerAddress.from_url(urls.app).host)
        assert socket_dir != server.pgdata and socket_dir.name.startswith("chronicle-pg-")
        assert _mode(socket_dir) == 0o700
        assert socket_dir.stat().st_uid == psutil.Process(server.status().pid).uids().real
        with psycopg.connect(urls.app) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
    assert not socket_dir.exists()


def test_a_killed_server_starts_again(server: EmbeddedPostgres) -> None:
    urls = server.ensure_running()
    pid = server.status().pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    psutil.Process(pid).wait(10) if psutil.pid_exists(pid) else None
    assert not server.status().running
    again = server.ensure_running()
    assert again == urls and server.status().pid not in (None, pid)
    with psycopg.connect(again.app) as connection:
        assert connection.execute("SELECT current_user").fetchone() == ("chronicle_app",)


def _old_style_server(pgdata: Path) -> str:
    """A data dir as older Chronicle versions made it: pgserver's defaults, trust auth."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    old = pgserver.get_server(pgdata, cleanup_mode=None)
    url = old.get_uri("postgres")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE DATABASE chronicle")
    with psycopg.connect(old.get_uri("chronicle"), autocommit=True) as connection:
        connection.execute("CREATE TABLE kept (note text)")
        connection.execute("INSERT INTO kept VALUES ('written before the upgrade')")
    return url


@pytest.mark.parametrize("running", [True, False], ids=["running", "stopped"])
def test_a_trust_era_data_dir_is_upgraded_in_place(server: EmbeddedPostgres, running: bool) -> None:
    server.data_dir.mkdir()
    old_url = _old_style_server(server.pgdata)
    with psycopg.connect(old_url) as connection:  # the hole: no password at all
        assert connection.execute("SELECT current_user").fetchone() == ("postgres",)
    if not running:
        assert server.stop()

    urls = server.ensure_running()

    address = ServerAddress.from_url(urls.admin)
    assert "no password supplied" in _refuses_without_password(address)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(old_url).close()
    with psycopg.connect(urls.admin) as connection:
        kept = connection.execute("SELECT note FROM kept").fetchall()
    assert kept == [("written before the upgrade",)]
    with psycopg.connect(urls.app) as connection:
        assert connection.execute("SELECT current_user").fetchone() == ("chronicle_app",)
    assert _mode(server.superuser_password_file) == 0o600
    # Upgraded once: the next start reuses the server and rewrites nothing.
    pid, hba = server.status().pid, (server.pgdata / "pg_hba.conf").stat().st_mtime_ns
    assert server.ensure_running() == urls
    assert server.status().pid == pid
    assert (server.pgdata / "pg_hba.conf").stat().st_mtime_ns == hba


AS_ANOTHER_USER = """
import json, stat, sys
from pathlib import Path
import psycopg
from app.store.embedded import EmbeddedPostgres

server = EmbeddedPostgres(Path(sys.argv[1]))
urls = server.ensure_running()
try:
    try:
        psycopg.connect(urls.app.replace(urls.app.split(":")[2].split("@")[0], "", 1)).close()
        refused = ""
    except psycopg.OperationalError as exc:
        refused = str(exc)
    with psycopg.connect(urls.app) as connection:
        user = connection.execute("SELECT current_user").fetchone()[0]
    modes = {
        name: oct(stat.S_IMODE(path.stat().st_mode))
        for name, path in {
            "data_dir": server.data_dir,
            "secrets": server.secrets_dir,
            "superuser": server.superuser_password_file,
            "app": server.app_password_file,
            "socket": server.pgdata / ".s.PGSQL.5432",
        }.items()
    }
    print(json.dumps({"refused": refused, "user": user, "modes": modes}))
finally:
    server.stop()
"""


def test_as_a_non_root_user(tmp_path: Path) -> None:
    """Run by a normal user the server runs as that user, with the same lock-down."""
    repo = ROOT
    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="chronicle-nonroot-pg-"))
    try:
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(base, nobody.pw_uid, nobody.pw_gid)
            prefix = [
                "setpriv",
                f"--reuid={nobody.pw_uid}",
                f"--regid={nobody.pw_gid}",
                "--clear-groups",
            ]
        finished = subprocess.run(
            [*prefix, sys.executable, "-c", AS_ANOTHER_USER, str(base / "data")],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base),
                 "PYTHONPATH": str(repo)},
            cwd=base, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert finished.returncode == 0, finished.stderr[-3000:]
        result = json.loads(finished.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "no password supplied" in result["refused"]
    assert result["user"] == "chronicle_app"
    assert result["modes"] == {
        "data_dir": "0o700",
        "secrets": "0o700",
        "superuser": "0o600",
        "app": "0o600",
        "socket": "0o700",
    }
