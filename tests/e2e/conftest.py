"""Real sandboxes: every runtime test runs against each available runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.runtime import LocalRuntime, Runtime


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture(params=["local"])
async def runtime(request: pytest.FixtureRequest, workspace: Path) -> AsyncIterator[Runtime]:
    sandbox = LocalRuntime(workspace, no_output_timeout=1.5)
    await sandbox.start()
    await sandbox.wait_ready(10)
    try:
        yield sandbox
    finally:
        await sandbox.close()
