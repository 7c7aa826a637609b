"""The provisioner contract: every test in this folder runs against each implementation of
``app.runtime.provisioner.Provisioner`` and says nothing about which one it got.

The Docker host pool is the one implementation today, over two engines of the tests' own
(``docker_engines``); a Kubernetes provisioner would join ``PROVISIONERS`` with a fixture
that gives it a cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.runtime.provisioner import Provisioner
from tests.support.host_pools import host_pool

PROVISIONERS = ("docker pool",)


@pytest.fixture(params=PROVISIONERS)
async def provisioner(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Provisioner]:
    engines = request.getfixturevalue("docker_engines")
    async with host_pool(engines, tmp_path) as pool:
        yield pool
