"""Fixtures of the access service's integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.config import Settings
from app.store import EventStore


@pytest.fixture
async def owner_store(database_url: str, settings: Settings) -> AsyncIterator[EventStore]:
    """The store through an owner login (the test server's superuser), as the CLI opens it:
    only it makes admins and their tokens, and changes a user's state."""
    async with await EventStore.open(
        database_url, config=settings.store, masker=settings.masker()
    ) as opened:
        yield opened
