"""System tests: real processes. The `chronicle` command as a subprocess (cli/: signals,
crashes, restarts, the embedded server), whole agent sessions with real sandboxes (agent/),
MCP servers (tools/), the sandboxes themselves and what drives them (runtime/), a PostgreSQL
server of the test's own killed, restarted or reached as another user (store/), and the
installed package, against real PostgreSQL and Docker."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.store.embedded import EmbeddedPostgres
from tests.support.fake_llm import FakeLlmServer


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data directory for an embedded server of the test's own (stopped at the end),
    beneath /tmp itself: the server's user must pass through its parents, and pytest makes its
    temporary root 0700 again whenever a pytest session starts on this machine."""
    path = Path(tempfile.mkdtemp(prefix="chronicle-system-"))
    try:
        yield path / "data"
    finally:
        # a test's other servers sit one folder down (``data_dir.parent / NAME / "data"``):
        # no deeper search, which would walk (and lock) every "data" folder of a test's venv
        for data in (path / "data", *path.glob("*/data")):
            if data.is_dir():
                EmbeddedPostgres(data).stop()
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeLlmServer]:
    """The scripted model server, one per test module: the upstream of a gateway's or an
    instrumented application's model calls (a module's tests script their replies)."""
    server = FakeLlmServer().start()
    try:
        yield server
    finally:
        server.stop()
