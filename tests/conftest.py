"""Fixtures shared by every folder: a real PostgreSQL, a migrated template, a fresh database
per test, the fake model server, a workspace and the Docker engine."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from app.config import Settings
from app.store import EventStore
from tests.support.ci import IN_CI
from tests.support.docker_engine import require_docker
from tests.support.fake_llm import FakeLlmServer
from tests.support.postgres import (
    PgServer,
    ServerAddress,
    database_from_template,
    database_name,
    migrated_template,
    role_settings_held,
    server_for_tests,
)
from tests.support.worker_order import SLOWEST_FILES, WORKER_ORDER

if TYPE_CHECKING:
    from tests.support.second_engine import SecondEngine

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    yield from server_for_tests()


@pytest.fixture(scope="session")
def pg_address(pg_server: PgServer) -> ServerAddress:
    """The test server as its superuser."""
    return pg_server.admin


@pytest.fixture
def role_settings_changing(pg_address: ServerAddress) -> Iterator[None]:
    """For a test that migrates below 0017: the roles' settings are the whole server's, so it
    changes them alone (``role_settings_held``)."""
    with role_settings_held(pg_address, changing=True):
        yield


@pytest.fixture
def role_settings_read(pg_address: ServerAddress) -> Iterator[None]:
    """For a test that reads the roles' settings: none is changing them meanwhile."""
    with role_settings_held(pg_address, changing=False):
        yield


@pytest.fixture(scope="session")
def pg_app_address(pg_server: PgServer) -> ServerAddress:
    """The test server as the application's login (chronicle_app's privileges)."""
    return pg_server.app


@pytest.fixture(scope="session")
def pg_template(pg_address: ServerAddress) -> Iterator[str]:
    yield from migrated_template(pg_address, f"chronicle_tmpl_{os.getpid()}")


@pytest.fixture
def database_url(pg_address: ServerAddress, pg_template: str) -> Iterator[str]:
    """A fresh, migrated database for this test, as the superuser."""
    yield from database_from_template(pg_address, pg_template, f"t_{uuid.uuid4().hex[:16]}")


@pytest.fixture
def app_database_url(database_url: str, pg_app_address: ServerAddress) -> str:
    """The same database as the application's login: what Chronicle runs with."""
    return pg_app_address.url(database_name(database_url))


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data", poll_interval=0.5)


@pytest.fixture
async def store(app_database_url: str, settings: Settings) -> AsyncIterator[EventStore]:
    """The event store as the application opens it: as chronicle_app, least privilege."""
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=settings.masker()
    ) as opened:
        yield opened


@pytest.fixture
async def owner_store(database_url: str, settings: Settings) -> AsyncIterator[EventStore]:
    """The event store through the database owner's login (what only it may write: an
    archive's marks, users)."""
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as opened:
        yield opened


@pytest.fixture
def fake_llm() -> Iterator[FakeLlmServer]:
    server = FakeLlmServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def superuser(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """The database's superuser: the only one who can switch the append-only triggers off."""
    connection = await asyncpg.connect(database_url)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture
async def app_login(app_database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A raw connection as the application's login, as a compromised application would use."""
    connection = await asyncpg.connect(app_database_url)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def docker_engines(docker_ready: None) -> Iterator[list[SecondEngine]]:
    """Two Docker engines of the tests' own besides the system's (a host pool's hosts),
    with the sandbox image, for the whole run; stopped at the end. Starting an engine
    takes root."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI=true but the host pool's tests need root to start Docker engines")
        pytest.skip("starting a Docker engine needs root")
    from tests.support.second_engine import more_engines

    with more_engines(Settings().sandbox.docker.base_image) as engines:
        yield engines


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Request it before starting a Docker sandbox: skips without an engine, fails instead
    with CI=true (CI must exercise Docker, never skip it)."""
    require_docker()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty directory for a sandbox's workspace."""
    path = tmp_path / "workspace"
    path.mkdir()
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the order as collected
        return

    def rank(item: pytest.Item) -> tuple[int, int]:
        parts = Path(str(item.path)).parts
        if "tests" not in parts:
            return len(WORKER_ORDER), 0
        start = parts.index("tests")
        folder = parts[start + 1]
        here = "/".join(parts[start:])
        if here in SLOWEST_FILES:
            return -1, SLOWEST_FILES.index(here)
        return (WORKER_ORDER.index(folder) if folder in WORKER_ORDER else len(WORKER_ORDER)), 0

    items.sort(key=rank)  # stable: each file's tests keep their order
