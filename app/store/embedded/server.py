"""An embedded PostgreSQL for running without any setup, locked down.

pgserver provides the PostgreSQL binaries and, when Chronicle runs as root, the system user the
server runs as; how the server is set up and started is decided here:

- the data directory is private (0700; 0710 with the server's group when running as root, so
  the server's user can reach its own directory and nothing else in it);
- the server lives in ``<data_dir>/postgres``, listens on no TCP address, and its Unix socket
  is in a private directory (``sockets``);
- every connection needs a password (scram-sha-256 for every line of pg_hba.conf);
- three generated passwords are kept in ``<data_dir>/secrets`` (0600): the superuser's, for
  migrations and `chronicle db`, ``chronicle_app``'s, the application's login, and
  ``chronicle_analyst``'s, the read-only login of `chronicle sql` (its transactions are read
  only by default, for psql and BI tools too);
- a data directory made by older versions (trust authentication) is upgraded in place on the
  next start: passwords set, pg_hba.conf rewritten, configuration reloaded.

The server keeps running after the command that started it exits; the next command reuses it,
and a stopped or killed server is started again by the next command that needs it. A server
that dies under `chronicle serve` or `chronicle worker` is started again by them
(``supervisor``, through ``start_if_died``). One process at a time starts or stops it (a lock
file in the data directory): the others wait, then find it running.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shlex
import stat
import tempfile
import time
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import psycopg
from psycopg import sql
from pydantic import BaseModel

from app.store.embedded.auth import PG_HBA, hba_requires_passwords, set_password
from app.store.embedded.postmaster import Postmaster, read_postmaster
from app.store.embedded.programs import (
    ServerUser,
    allow_traversal,
    process_gid,
    run_program,
    server_user,
    write_server_file,
)
from app.store.embedded.sockets import (
    PORT,
    dead_servers_socket_dir,
    remove_socket_dir,
    socket_dir,
)
from app.store.errors import StoreError
from app.store.private_files import private_dir, read_secret, secret_in

log = logging.getLogger(__name__)

DATABASE = "chronicle"
SUPERUSER = "postgres"
APP_ROLE = "chronicle_app"
ANALYST_ROLE = "chronicle_analyst"
START_ATTEMPTS_SECONDS = 20.0

#: Settings on the server's command line outrank postgresql.conf and ALTER SYSTEM.
SERVER_SETTINGS = {
    "listen_addresses": "",
    "unix_socket_permissions": "0700",
    "password_encryption": "scram-sha-256",
}


class EmbeddedUrls(NamedTuple):
    """How to reach the running server: as the superuser (admin), as the application, and as
    the read-only analyst."""

    admin: str
    app: str
    analyst: str


class Revival(StrEnum):
    """What ``start_if_died`` found: the server ``running`` (another process started it, or
    it never died), ``started`` by this call, or ``stopped`` on purpose (left stopped)."""

    RUNNING = "running"
    STARTED = "started"
    STOPPED = "stopped"


class EmbeddedStatus(BaseModel):
    pgdata: Path
    initialised: bool
    running: bool
    pid: int | None = None
    #: The application's URL (chronicle_app, with its password); redact before printing.
    url: str | None = None
    #: The superuser's URL (with its password), for migrations and admin.
    admin_url: str | None = None


def server_url(role: str, password: str | None, database: str, server: Postmaster) -> str:
    auth = quote(role, safe="") + (f":{quote(password, safe='')}" if password else "")
    host = quote(str(server.socket_dir), safe="/")
    return f"postgresql://{auth}@/{database}?host={host}&port={server.port}"


class EmbeddedPostgres:
    """Set up, start, inspect, restart and stop the embedded server of one data directory."""

    def __init__(self, data_dir: Path, port: int = PORT) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        #: Names its socket (``.s.PGSQL.<port>``); a standby of this server takes another.
        self.port = port
        self.pgdata = self.data_dir / "postgres"
        self.secrets_dir = self.data_dir / "secrets"
        self.superuser_password_file = self.secrets_dir / "postgres-superuser.password"
        self.app_password_file = self.secrets_dir / "postgres-chronicle_app.password"
        self.analyst_password_file = self.secrets_dir / "postgres-chronicle_analyst.password"
        self._log_file = self.pgdata / "log"
        self._provisioned = self.pgdata / "chronicle-provisioned"

    # -- public ------------------------------------------------------------------------------

    def start(self) -> str:
        """Start (or reuse) the server; the superuser's URL (for migrations and admin)."""
        return self.ensure_running().admin

    def ensure_running(self) -> EmbeddedUrls:
        """Set up, upgrade or start the server as needed; the URLs to reach it."""
        with self._exclusive():
            return self._ensure_running()

    def start_if_died(self) -> Revival:
        """Start the server again if it died without stopping (its ``postmaster.pid`` left
        behind names a dead process); a server stopped on purpose (`chronicle db stop`, whose
        clean shutdown removes the file) stays stopped. Decided under the lock, so of the
        processes that saw it die one starts it and the others find it running."""
        with self._exclusive():
            if read_postmaster(self.pgdata) is not None:
                return Revival.RUNNING
            if not (self.pgdata / "postmaster.pid").exists():
                return Revival.STOPPED
            self._ensure_running()
            return Revival.STARTED

    def _ensure_running(self) -> EmbeddedUrls:
        user = server_user()
        server = read_postmaster(self.pgdata)
        if server is not None and not self._is_private(server, user):
            # Before the directories are locked down: it may no longer reach them after.
            log.warning("restarting the embedded PostgreSQL on a private socket")
            self._pg_ctl(user, "-m", "fast", "stop")
            server = None
        self._prepare_directories(user)
        if not (self.pgdata / "PG_VERSION").exists():
            self._initdb(user)
        if server is None:
            directory = socket_dir(self.pgdata, user, dead_servers_socket_dir(self.pgdata))
            server = self._start_server(user, directory)
        server = self._wait_ready(server)
        if not hba_requires_passwords(self.pgdata):
            self._upgrade_from_trust(server)
        if not self._is_provisioned():
            self._provision(server)
        return EmbeddedUrls(
            admin=server_url(SUPERUSER, self._superuser_password(), DATABASE, server),
            app=server_url(APP_ROLE, read_secret(self.app_password_file), DATABASE, server),
            analyst=server_url(
                ANALYST_ROLE, read_secret(self.analyst_password_file), DATABASE, server
            ),
        )

    def status(self) -> EmbeddedStatus:
        initialised = (self.pgdata / "PG_VERSION").exists()
        server = read_postmaster(self.pgdata) if initialised else None
        running = server is not None and server.ready
        url = admin_url = None
        if server is not None and running:
            if self.app_password_file.exists():
                url = server_url(APP_ROLE, read_secret(self.app_password_file), DATABASE, server)
            if self.superuser_password_file.exists():
                password = read_secret(self.superuser_password_file)
                admin_url = server_url(SUPERUSER, password, DATABASE, server)
        return EmbeddedStatus(
            pgdata=self.pgdata,
            initialised=initialised,
            running=running,
            pid=server.pid if running and server else None,
            url=url,
            admin_url=admin_url,
        )

    def restart(self) -> None:
        """Fast restart: every client connection is cut, the data and settings stay."""
        with self._exclusive():
            self._pg_ctl(server_user(), "-m", "fast", "-l", str(self._log_file), "restart")

    def stop(self) -> bool:
        """Stop the server if it runs; True when it was running."""
        with self._exclusive():
            server = read_postmaster(self.pgdata)
            if server is None:
                return False
            user = server_user()
            self._pg_ctl(user, "-m", "fast", "stop")
            remove_socket_dir(self.pgdata, server.socket_dir, user)
            return True

    def start_as_is(self) -> Postmaster:
        """Start the cluster already in ``pgdata`` as it is, with no set-up (a standby, whose
        roles and files come from its primary); the running server."""
        with self._exclusive():
            user = server_user()
            server = read_postmaster(self.pgdata)
            if server is None:
                self._prepare_directories(user)
                directory = socket_dir(self.pgdata, user, dead_servers_socket_dir(self.pgdata))
                server = self._start_server(user, directory)
            return self._wait_ready(server)

    def promote(self) -> None:
        """End a standby's recovery: it takes writes from then on (``pg_ctl promote``)."""
        with self._exclusive():
            self._pg_ctl(server_user(), "promote")

    def prepare_directories(self) -> None:
        """The data directory, private, with an empty ``pgdata`` the server's user owns (for
        ``pg_basebackup`` to fill)."""
        with self._exclusive():
            self._prepare_directories(server_user())

    def provision_again(self) -> None:
        """Create the application's login and database again on the next start (after a
        downgrade to the empty schema dropped chronicle_app)."""
        self._provisioned.unlink(missing_ok=True)

    # -- directories and secrets ---------------------------------------------------------------

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One process at a time sets up, starts or stops this server."""
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.data_dir / ".postgres.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _prepare_directories(self, user: ServerUser | None) -> None:
        if user is None:
            private_dir(self.data_dir)
        else:
            # The server's user may pass through (not list) the data dir to reach its own.
            private_dir(self.data_dir, 0o710)
            os.chown(self.data_dir, -1, user.gid)
            allow_traversal(self.data_dir.parent, user.gid)
        private_dir(self.secrets_dir)
        if not self.pgdata.exists():
            self.pgdata.mkdir(mode=0o700)
            if user is not None:
                os.chown(self.pgdata, user.uid, user.gid)

    def _superuser_password(self) -> str:
        try:
            return read_secret(self.superuser_password_file)
        except FileNotFoundError:
            raise StoreError(
                f"the embedded PostgreSQL's superuser password file {self.superuser_password_file}"
                " is missing; restore it from a backup of the data directory"
            ) from None

    # -- the server process --------------------------------------------------------------------

    def _run(self, user: ServerUser | None, program: str, *args: str) -> None:
        run_program(
            user,
            program,
            *args,
            failure=lambda output: (
                f"{program} failed for the embedded PostgreSQL in {self.pgdata}: "
                f"{output}{self._log_tail()}"
            ),
        )

    def _pg_ctl(self, user: ServerUser | None, *args: str) -> None:
        self._run(user, "pg_ctl", "-D", str(self.pgdata), "-w", "-t", "60", *args)

    def _log_tail(self) -> str:
        try:
            lines = self._log_file.read_text(errors="replace").splitlines()[-15:]
        except OSError:
            return ""
        return "\nserver log:\n" + "\n".join(lines) if lines else ""

    def _initdb(self, user: ServerUser | None) -> None:
        """A new cluster whose superuser has a generated password from the start."""
        password = secret_in(self.superuser_password_file)
        with tempfile.TemporaryDirectory(prefix="chronicle-initdb-") as scratch:
            pwfile = Path(scratch) / "password"
            pwfile.write_text(password + "\n")
            pwfile.chmod(0o600)
            if user is not None:
                os.chown(scratch, user.uid, user.gid)
                os.chown(pwfile, user.uid, user.gid)
            self._run(
                user,
                "initdb",
                "-D",
                str(self.pgdata),
                "--auth=scram-sha-256",
                "--encoding=utf8",
                f"--username={SUPERUSER}",
                f"--pwfile={pwfile}",
            )
        write_server_file(self.pgdata / "pg_hba.conf", PG_HBA, user)

    def _start_server(self, user: ServerUser | None, sockets: Path) -> Postmaster:
        settings = {
            **SERVER_SETTINGS,
            "port": str(self.port),
            "unix_socket_directories": str(sockets),
        }
        options = " ".join(f"-c {shlex.quote(f'{k}={v}')}" for k, v in settings.items())
        deadline = time.monotonic() + START_ATTEMPTS_SECONDS
        while True:
            try:
                self._pg_ctl(user, "-l", str(self._log_file), "-o", options, "start")
                break
            except StoreError:
                # A killed server's backends may still hold its shared memory for a moment.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        server = read_postmaster(self.pgdata)
        if server is None:
            raise StoreError(f"the embedded PostgreSQL did not start{self._log_tail()}")
        return server

    def _wait_ready(self, server: Postmaster) -> Postmaster:
        deadline = time.monotonic() + 60
        current: Postmaster | None = server
        while current is None or not current.ready:
            if time.monotonic() > deadline:
                raise StoreError(f"the embedded PostgreSQL is not ready{self._log_tail()}")
            time.sleep(0.1)
            current = read_postmaster(self.pgdata)
        return current

    def _is_private(self, server: Postmaster, user: ServerUser | None) -> bool:
        """No TCP address, a socket directory only the server's user can enter, and a server
        process that runs as we would run it."""
        if server.listen or server.socket_dir is None:
            return False
        try:
            info = server.socket_dir.lstat()
        except OSError:
            return False
        owner = user.uid if user is not None else os.geteuid()
        if not (stat.S_ISDIR(info.st_mode) and info.st_uid == owner and not info.st_mode & 0o077):
            return False
        # pgserver ran the server with root's group, which cannot pass through the data dir
        # (0710, the server's group) once it is locked down.
        return user is None or process_gid(server.pid) == user.gid

    # -- authentication ------------------------------------------------------------------------

    def _upgrade_from_trust(self, server: Postmaster) -> None:
        """A data dir of an older Chronicle trusted every local connection: set the superuser's
        password through that trust, then require passwords and reload."""
        log.warning("the embedded PostgreSQL allowed connections without a password; fixing")
        password = secret_in(self.superuser_password_file)
        # Trust ignores the password; a server already asking for one gets the right one.
        url = server_url(SUPERUSER, password, "postgres", server)
        with psycopg.connect(url, autocommit=True) as admin:
            set_password(admin, SUPERUSER, password)
            write_server_file(self.pgdata / "pg_hba.conf", PG_HBA, server_user())
            admin.execute("SELECT pg_reload_conf()")
        self._require_password(server)
        self._provisioned.unlink(missing_ok=True)

    def _require_password(self, server: Postmaster) -> None:
        """Wait until the reloaded configuration refuses a connection without a password."""
        deadline = time.monotonic() + 10
        while True:
            try:
                psycopg.connect(server_url(SUPERUSER, None, "postgres", server)).close()
            except psycopg.OperationalError:
                return
            if time.monotonic() > deadline:
                raise StoreError(
                    "the embedded PostgreSQL still accepts connections without a password; "
                    f"`chronicle db stop`, then run the command again{self._log_tail()}"
                )
            time.sleep(0.1)

    def _is_provisioned(self) -> bool:
        return (
            self._provisioned.exists()
            and self.app_password_file.exists()
            and self.analyst_password_file.exists()
        )

    def _provision(self, server: Postmaster) -> None:
        """The application's and the analyst's logins with their passwords, and the
        ``chronicle`` database (the migrations grant each role its privileges)."""
        admin_url = server_url(SUPERUSER, self._superuser_password(), "postgres", server)
        with psycopg.connect(admin_url, autocommit=True) as admin:
            for role, password_file in (
                (APP_ROLE, self.app_password_file),
                (ANALYST_ROLE, self.analyst_password_file),
            ):
                exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
                if exists.fetchone() is None:
                    admin.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
                set_password(admin, role, secret_in(password_file))
            admin.execute(
                sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(
                    sql.Identifier(ANALYST_ROLE)
                )
            )
            found = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
            if found.fetchone() is None:
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        self._provisioned.write_text(
            "chronicle_app and chronicle_analyst logins, database created\n"
        )
