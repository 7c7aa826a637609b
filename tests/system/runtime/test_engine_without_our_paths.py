"""A Docker engine that does not see the worker's files (an engine on another machine, here a
dockerd in a mount namespace of its own with an empty tmpfs over the worker's directory)
starts a sandbox that can never serve it: the start fails saying why, instead of "not ready"
or the container's own complaint alone (docs/sandboxes.md, "Paths")."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from app.config import Settings
from app.runtime.docker.runtime import DockerRuntime
from app.runtime.errors import SandboxStartError
from app.runtime.image import ensure_image
from tests.support.ci import IN_CI
from tests.support.second_engine import SecondEngine, load_sandbox_image


@pytest.fixture
def elsewhere(docker_ready: None) -> Iterator[tuple[SecondEngine, Path]]:
    """An engine that sees an empty directory where the worker's directory is; that directory."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI=true but this test needs root to start a Docker engine")
        pytest.skip("starting a Docker engine needs root")
    # short paths: a Unix socket's path must stay under ~100 bytes
    hidden = Path(tempfile.mkdtemp(prefix="chronicle-h-"))
    engine = SecondEngine(Path(tempfile.mkdtemp(prefix="chronicle-d3-")), hidden=hidden)
    try:
        engine.start()
        tag, _ = ensure_image(docker.from_env(), Settings().sandbox.docker.base_image)
        archive = engine.root / "sandbox-image.tar"
        subprocess.run(["docker", "save", "-o", str(archive), tag], check=True)
        load_sandbox_image(engine, archive)
        archive.unlink()
        yield engine, hidden
    finally:
        engine.stop()
        subprocess.Popen(["rm", "-rf", str(engine.root)], start_new_session=True)
        shutil.rmtree(hidden, ignore_errors=True)


async def test_a_sandbox_on_an_engine_that_does_not_see_our_files_says_so(
    elsewhere: tuple[SecondEngine, Path],
) -> None:
    engine, hidden = elsewhere
    (hidden / "workspace").mkdir()
    (hidden / "workspace" / "README").write_text("here, not there\n")
    runtime = DockerRuntime(
        hidden / "workspace",
        uuid.uuid4(),
        config=Settings().sandbox.docker,
        client=engine.client(),
        socket_root=hidden / "sockets",
    )
    try:
        await runtime.start()
        with pytest.raises(SandboxStartError, match="does not see this machine's files"):
            await runtime.wait_ready(timeout=15)
    finally:
        await runtime.close()
