"""The runtime contract: every test in this folder runs once against each Runtime.

What a sandbox promises the executor (docs/architecture.md, "Sandboxes") holds for every
implementation: a test here takes the ``runtime`` fixture and says nothing about which one it
got. Every kind registered in ``app.runtime.kinds`` joins the suite by itself (``RUNTIME_KINDS``);
one that needs a fixture first (a Docker engine) names it in ``NEEDS``
(tests/support/sandboxes.py). Tests of one runtime's own defences (the
local jail, Docker's hardening) are in tests/system/runtime/.

The Docker runtime needs a Docker engine. Without one its tests are skipped, except with
CI=true, where a missing engine fails the run (CI must exercise Docker, never skip it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.runtime import Runtime
from app.runtime.kinds import KINDS
from tests.support.sandboxes import NEEDS, RUNTIME_KINDS, started_runtime


@pytest.fixture(params=RUNTIME_KINDS)
async def runtime(
    request: pytest.FixtureRequest, workspace: Path, tmp_path: Path
) -> AsyncIterator[Runtime]:
    """Each test that takes this runs once per runtime."""
    if request.param in NEEDS:
        request.getfixturevalue(NEEDS[request.param])
    async with started_runtime(request.param, workspace, tmp_path) as sandbox:
        yield sandbox


@pytest.fixture
def inside(runtime: Runtime, workspace: Path) -> str:
    """The workspace's path as commands in the sandbox see it."""
    return KINDS[str(getattr(runtime, "name", ""))].workspace_inside(str(workspace))
