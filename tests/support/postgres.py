"""PostgreSQL for the tests: an embedded server and pytest-postgresql databases on it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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
        return cls(host, parts.port or 5432, parts.username or "postgres", parts.password or None)

    def url(self, dbname: str) -> str:
        auth = self.user + (f":{self.password}" if self.password else "")
        if self.host.startswith("/"):
            return f"postgresql://{auth}@/{dbname}?host={self.host}&port={self.port}"
        return f"postgresql://{auth}@{self.host}:{self.port}/{dbname}"


def start_embedded(root: Path) -> tuple[EmbeddedPostgres, str]:
    server = EmbeddedPostgres(root)
    return server, server.start()


def server_url_for_tests() -> Iterator[str]:
    """An existing server from CHRONICLE_TEST_DATABASE_URL, or a fresh embedded one."""
    configured = os.environ.get("CHRONICLE_TEST_DATABASE_URL")
    if configured:
        yield configured
        return
    with tempfile.TemporaryDirectory(prefix="chronicle-test-pg-") as root:
        server, url = start_embedded(Path(root))
        try:
            yield url
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
