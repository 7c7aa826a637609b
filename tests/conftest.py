"""Shared fixtures: a real PostgreSQL, a migrated template, a fresh database per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from app.config import Settings
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer
from tests.support.postgres import (
    ServerAddress,
    database_from_template,
    migrated_template,
    server_url_for_tests,
)

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def pg_address() -> Iterator[ServerAddress]:
    for url in server_url_for_tests():
        yield ServerAddress.from_url(url)


@pytest.fixture(scope="session")
def pg_template(pg_address: ServerAddress) -> Iterator[str]:
    yield from migrated_template(pg_address, f"chronicle_tmpl_{os.getpid()}")


@pytest.fixture
def database_url(pg_address: ServerAddress, pg_template: str) -> Iterator[str]:
    """A fresh, migrated database for this test."""
    yield from database_from_template(pg_address, pg_template, f"t_{uuid.uuid4().hex[:16]}")


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data", poll_interval=0.5)


@pytest.fixture
async def store(database_url: str, settings: Settings) -> AsyncIterator[EventStore]:
    async with await EventStore.open(database_url, settings=settings) as opened:
        yield opened


@pytest.fixture
def fake_llm() -> Iterator[FakeLlmServer]:
    server = FakeLlmServer().start()
    try:
        yield server
    finally:
        server.stop()
