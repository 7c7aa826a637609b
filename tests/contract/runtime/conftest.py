"""Real sandboxes: every runtime test runs against each runtime.

The Docker runtime needs a Docker engine. Without one its tests are skipped, except with
CI=true, where a missing engine fails the run (CI must exercise Docker, never skip it).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.config import Settings
from app.runtime import LocalRuntime, Runtime
from app.runtime.docker.runtime import DockerRuntime

IN_CI = os.environ.get("CI") == "true"


def docker_engine_problem() -> str | None:
    """Why Docker tests cannot run here, or None when they can."""
    import docker

    try:
        docker.from_env().ping()
    except Exception as exc:  # any failure to reach the engine
        return f"no Docker engine ({exc})"
    return None


@pytest.fixture(scope="session")
def docker_ready() -> None:
    problem = docker_engine_problem()
    if problem:
        if IN_CI:
            pytest.fail(f"CI=true but the Docker tests cannot run: {problem}")
        pytest.skip(problem)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


def sandbox_settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data", sandbox_no_output_timeout=1.5, sandbox_pids_limit=256
    )


async def started(
    request: pytest.FixtureRequest, kind: str, workspace: Path, tmp_path: Path
) -> AsyncIterator[Runtime]:
    sandbox: LocalRuntime | DockerRuntime
    if kind == "docker":
        request.getfixturevalue("docker_ready")
        config = sandbox_settings(tmp_path).docker_config()
        sandbox = DockerRuntime(workspace, uuid.uuid4(), config=config)
    else:
        sandbox = LocalRuntime(workspace, no_output_timeout=1.5)
    await sandbox.start()
    try:
        await sandbox.wait_ready(60)
        yield sandbox
    finally:
        await sandbox.close()


@pytest.fixture(params=["local", "docker"])
async def runtime(
    request: pytest.FixtureRequest, workspace: Path, tmp_path: Path
) -> AsyncIterator[Runtime]:
    """Each test that takes this runs once per runtime."""
    async for sandbox in started(request, request.param, workspace, tmp_path):
        yield sandbox


@pytest.fixture
async def local_runtime(
    request: pytest.FixtureRequest, workspace: Path, tmp_path: Path
) -> AsyncIterator[Runtime]:
    async for sandbox in started(request, "local", workspace, tmp_path):
        yield sandbox


@pytest.fixture
async def docker_runtime(
    request: pytest.FixtureRequest, workspace: Path, tmp_path: Path
) -> AsyncIterator[Runtime]:
    async for sandbox in started(request, "docker", workspace, tmp_path):
        yield sandbox


@pytest.fixture
def inside(runtime: Runtime, workspace: Path) -> str:
    """The workspace's path as commands in the sandbox see it."""
    return "/workspace" if isinstance(runtime, DockerRuntime) else str(workspace)
