"""One runtime of a given kind, for the tests of what only that runtime does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.runtime import Runtime
from tests.support.sandboxes import started_runtime


@pytest.fixture
async def local_runtime(workspace: Path, tmp_path: Path) -> AsyncIterator[Runtime]:
    async with started_runtime("local", workspace, tmp_path) as sandbox:
        yield sandbox


@pytest.fixture
async def docker_runtime(
    docker_ready: None, workspace: Path, tmp_path: Path
) -> AsyncIterator[Runtime]:
    async with started_runtime("docker", workspace, tmp_path) as sandbox:
        yield sandbox
