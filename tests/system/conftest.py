"""System tests: the `chronicle` command as real processes (signals, crashes, restarts, an
installed package), against real PostgreSQL, sandboxes and Docker."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.store.embedded import EmbeddedPostgres


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data directory for an embedded server of the test's own (stopped at the end),
    beneath /tmp itself: the server's user must pass through its parents, and pytest makes its
    temporary root 0700 again whenever a pytest session starts on this machine."""
    path = Path(tempfile.mkdtemp(prefix="chronicle-system-"))
    try:
        yield path / "data"
    finally:
        for data in path.glob("**/data"):
            EmbeddedPostgres(data).stop()
        shutil.rmtree(path, ignore_errors=True)
