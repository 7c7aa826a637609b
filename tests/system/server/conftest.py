"""A real `chronicle serve` on a fresh database of the test server (as chronicle_app), with
its own data directory and an empty settings file; tokens made by the real CLI (with the
owner's login, as an operator makes an admin)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.postgres import PgServer, database_from_template


def server_environment(
    pg_server: PgServer, template: str, root: Path, **settings: str
) -> Generator[dict[str, str], None, None]:
    for admin_url in database_from_template(
        pg_server.admin, template, f"srv_{uuid.uuid4().hex[:16]}"
    ):
        yield database_environment(pg_server, admin_url, root, **settings)


@pytest.fixture(scope="module")
def shared_server(
    pg_server: PgServer, pg_template: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One server for a module's tests that do not need settings of their own."""
    root = tmp_path_factory.mktemp("server")
    for env in server_environment(pg_server, pg_template, root):
        server = start_server(env)
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def serve(
    pg_server: PgServer, pg_template: str, tmp_path: Path
) -> Iterator[Callable[..., ServerProcess]]:
    """``serve(**settings)`` starts a server of the test's own with these settings."""
    started: list[ServerProcess] = []
    environments: list[Generator[dict[str, str], None, None]] = []

    def start(*args: str, **settings: str) -> ServerProcess:
        root = tmp_path / f"server{len(started)}"
        root.mkdir()
        environment = server_environment(pg_server, pg_template, root, **settings)
        environments.append(environment)
        server = start_server(next(environment), *args)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            if server.process.poll() is None:
                server.stop()
        for environment in environments:
            environment.close()


os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def database_env(pg_server: PgServer, pg_template: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a fresh database, for several processes of one deployment."""
    root = tmp_path / "deployment"
    root.mkdir()
    yield from server_environment(pg_server, pg_template, root)
