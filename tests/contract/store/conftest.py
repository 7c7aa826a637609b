"""The event store contract: every test in this folder runs once per EventStore implementation.

The suite says what any event store promises through its public API (docs/architecture.md):
gapless seqs, atomic and idempotent appends, the refusals, live subscriptions that deliver
every event once and in order, durable checkpoints, ``verify``, and payloads of any text and
size coming back whole from every reader. It never looks at how an implementation stores
them: no SQL, no pool, no fixture of one implementation (tests/unit/test_tests_layout.py
holds it to that). What only PostgreSQL does (grouped appends, NOTIFY, late commits, the
triggers, roles and tampering) is in tests/integration/store/.

One abstract suite, one fixture per implementation (pyeventsourcing's idea, with a
parametrized fixture in place of a base class): an implementation joins by adding a fixture
``<name>_stores`` that returns a ``StoreOpener`` and its name to ``IMPLEMENTATIONS``.

The part of the contract one session's loop relies on (``SessionLog``: append, read,
subscribe, checkpoints; test_session_log.py) runs against ``MemoryLog`` too: its tests take
``session_log``, opened by ``<name>_stores`` or ``<name>_logs`` for each of
``LOG_IMPLEMENTATIONS``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from app.config import Settings
from app.store import EventStore, MemoryLog, SessionLog
from app.store.config import StoreConfig
from tests.support.stores import LogOpener, StoreOpener

IMPLEMENTATIONS = ["postgresql"]
LOG_IMPLEMENTATIONS = ["postgresql", "memory"]


@pytest.fixture
def postgresql_stores(app_database_url: str, settings: Settings) -> StoreOpener:
    """Stores on the test's fresh database, as the application opens them (chronicle_app)."""

    @asynccontextmanager
    async def open_store(**config: Any) -> AsyncIterator[EventStore]:
        store_config = StoreConfig.model_validate(settings.store.model_dump() | config)
        async with await EventStore.open(
            app_database_url, config=store_config, masker=settings.masker()
        ) as store:
            yield store

    return open_store


@pytest.fixture
def memory_logs() -> LogOpener:
    """One ``MemoryLog`` per test: every opening is another client of it."""
    log = MemoryLog(config=StoreConfig())

    @asynccontextmanager
    async def open_log(**config: Any) -> AsyncIterator[MemoryLog]:
        log.config = StoreConfig.model_validate(log.config.model_dump() | config)
        yield log

    return open_log


@pytest.fixture(params=IMPLEMENTATIONS)
def open_store(request: pytest.FixtureRequest) -> StoreOpener:
    """Opens stores of the implementation under test, all on one log."""
    opener: StoreOpener = request.getfixturevalue(f"{request.param}_stores")
    return opener


@pytest.fixture
async def store(open_store: StoreOpener) -> AsyncIterator[EventStore]:
    async with open_store() as opened:
        yield opened


@pytest.fixture
async def other(open_store: StoreOpener) -> AsyncIterator[EventStore]:
    """A second client of the same log: what it reads and is delivered, another wrote."""
    async with open_store() as opened:
        yield opened


@pytest.fixture(params=LOG_IMPLEMENTATIONS)
async def session_log(request: pytest.FixtureRequest) -> AsyncIterator[SessionLog]:
    """A ``SessionLog`` of the implementation under test."""
    name = "postgresql_stores" if request.param == "postgresql" else f"{request.param}_logs"
    opener: LogOpener = request.getfixturevalue(name)
    async with opener() as opened:
        yield opened
