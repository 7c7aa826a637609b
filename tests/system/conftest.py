"""System tests: the `chronicle` command as real processes (signals, crashes, restarts, an
installed package), against real PostgreSQL, sandboxes and Docker."""

from __future__ import annotations

import pytest

from tests.support.docker_engine import require_docker


@pytest.fixture(scope="session")
def docker_ready() -> None:
    require_docker()
