"""PostgreSQL for the tests: an embedded server and pytest-postgresql databases on it.

Two logins reach every test database: the server's superuser (``database_url``: creates and
migrates databases, plays the attacker who tampers with rows) and the application's
``chronicle_app`` (``app_database_url``, what the ``store`` fixture uses), so the whole suite
runs the application with the privileges it has in production.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import psycopg
from psycopg import sql
from pytest_postgresql.janitor import DatabaseJanitor

from app.store import migrate
from app.store.embedded import EmbeddedPostgres


@dataclass(frozen=True)
class ServerAddress:
    """How pytest-postgresql's janitor reaches a server (host may be a socket directory)."""

    host: str
    port: int
    user: str
    password: str | None

    @classmethod
    def from_url(cls, url: str) -> ServerAddress:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        host = query.get("host", [parts.hostname or "localhost"])[0]
        port = int(query.get("port", [parts.port or 5432])[0])
        return cls(host, port, parts.username or "postgres", parts.password or None)

    def url(self, dbname: str) -> str:
        auth = quote(self.user, safe="")
        if self.password:
            auth += ":" + quote(self.password, safe="")
        if self.host.startswith("/"):
            return f"postgresql://{auth}@/{dbname}?host={self.host}&port={self.port}"
        return f"postgresql://{auth}@{self.host}:{self.port}/{dbname}"


@dataclass(frozen=True)
class PgServer:
    """The server of this test run: its superuser, and the application's login."""

    admin: ServerAddress
    app: ServerAddress


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def start_embedded(root: Path) -> tuple[EmbeddedPostgres, str]:
    """An embedded server in ``root``; its superuser's URL."""
    server = EmbeddedPostgres(root)
    return server, server.start()


def server_for_tests() -> Iterator[PgServer]:
    """A fresh embedded server, or an existing one from CHRONICLE_TEST_DATABASE_URL.

    On an existing server (its URL names a superuser) the application's login is a role made
    for this run, a member of ``chronicle_app`` with its privileges, dropped at the end.
    """
    configured = os.environ.get("CHRONICLE_TEST_DATABASE_URL")
    if configured:
        admin = ServerAddress.from_url(configured)
        login = f"chronicle_app_test_{os.getpid()}"
        password = secrets.token_urlsafe(24)
        with psycopg.connect(configured, autocommit=True) as connection:
            connection.execute(
                "DO $$ BEGIN IF to_regrole('chronicle_app') IS NULL THEN "
                "CREATE ROLE chronicle_app NOLOGIN; END IF; END $$"
            )
            connection.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE chronicle_app").format(
                    sql.Identifier(login), sql.Literal(password)
                )
            )
        try:
            yield PgServer(admin, replace(admin, user=login, password=password))
        finally:
            with psycopg.connect(configured, autocommit=True) as connection:
                connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))
        return
    with tempfile.TemporaryDirectory(prefix="chronicle-test-pg-") as root:
        server = EmbeddedPostgres(Path(root))
        urls = server.ensure_running()
        try:
            yield PgServer(ServerAddress.from_url(urls.admin), ServerAddress.from_url(urls.app))
        finally:
            server.stop()


def _janitor(address: ServerAddress, name: str, **options: object) -> DatabaseJanitor:
    return DatabaseJanitor(
        user=address.user,
        host=address.host,
        port=address.port,
        password=address.password,
        dbname=name,
        **options,  # type: ignore[arg-type]
    )


def migrated_template(address: ServerAddress, name: str) -> Iterator[str]:
    """A template database at the migration head, dropped at the end of the test run."""
    janitor = _janitor(address, name, as_template=True)
    janitor.drop()
    with janitor:
        migrate.upgrade(address.url(name))
        yield name


def database_from_template(address: ServerAddress, template: str, name: str) -> Iterator[str]:
    """A fresh database cloned from ``template`` for one test; dropped afterwards."""
    janitor = _janitor(address, name, template_dbname=template)
    with janitor:
        yield address.url(name)


@contextlib.contextmanager
def role_settings_held(server: ServerAddress, *, changing: bool) -> Iterator[None]:
    """Hold the test server's role settings still, or change them alone.

    ``ALTER ROLE ... SET`` belongs to the cluster, not to a database: a test that migrates a
    database of its own below revision 0017 resets ``chronicle_app``'s and
    ``chronicle_analyst``'s ``statement_timeout`` for every database of the test server until
    it migrates up again, and a test reading those defaults in parallel (another xdist worker)
    saw ``0``. Such a test holds this lock exclusively (``changing``), and the settings it
    found are put back when it ends (a later test of the same process reads them too); one
    that reads them shares it. An ``flock`` on a file named after the server: every worker of
    the run meets there, and the lock goes with the process that held it."""
    name = hashlib.sha256(f"{server.host}:{server.port}".encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"chronicle-test-role-settings-{name}.lock"
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if changing else fcntl.LOCK_SH)
        try:
            if not changing:
                yield
                return
            kept = _role_settings(server)
            try:
                yield
            finally:
                _restore_role_settings(server, kept)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: The roles whose server-wide settings a migration sets (0017: their statement timeouts).
MIGRATED_ROLES = ("chronicle_app", "chronicle_analyst")


def _role_settings(server: ServerAddress) -> dict[str, list[str]]:
    """Each migrated role's server-wide settings (``ALTER ROLE ... SET``), as ``name=value``."""
    with psycopg.connect(server.url("postgres"), autocommit=True) as connection:
        rows = connection.execute(
            "SELECT r.rolname, s.setconfig FROM pg_roles r LEFT JOIN pg_db_role_setting s "
            "ON s.setrole = r.oid AND s.setdatabase = 0 WHERE r.rolname = ANY(%s)",
            [list(MIGRATED_ROLES)],
        ).fetchall()
    return {role: list(config or []) for role, config in rows}


def _restore_role_settings(server: ServerAddress, kept: dict[str, list[str]]) -> None:
    """Put back what a test that migrated below 0017 changed: a later test of the same run
    (``test_statement_timeout.py``) reads the roles' defaults, which are the whole server's."""
    with psycopg.connect(server.url("postgres"), autocommit=True) as connection:
        for role, config in kept.items():
            connection.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(sql.Identifier(role)))
            for setting in config:
                key, _, value = setting.partition("=")
                connection.execute(
                    sql.SQL("ALTER ROLE {} SET {} = {}").format(
                        sql.Identifier(role), sql.Identifier(key), sql.Literal(value)
                    )
                )
