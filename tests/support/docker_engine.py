"""Whether a Docker engine is there for the tests that need one (CI=true: it must be)."""

from __future__ import annotations

import pytest

from tests.support.ci import IN_CI


def docker_engine_problem() -> str | None:
    """Why Docker tests cannot run here, or None when they can."""
    import docker

    try:
        docker.from_env().ping()
    except Exception as exc:  # any failure to reach the engine
        return f"no Docker engine ({exc})"
    return None


def require_docker() -> None:
    """Skip without an engine; fail instead with CI=true (CI must exercise Docker)."""
    problem = docker_engine_problem()
    if problem:
        if IN_CI:
            pytest.fail(f"CI=true but the Docker tests cannot run: {problem}")
        pytest.skip(problem)


def session_containers(session: str) -> list[str]:
    """Names of the containers (running or not) labelled with this session."""
    import docker

    found = docker.from_env().containers.list(
        all=True, filters={"label": f"chronicle.session={session}"}
    )
    return [container.name for container in found]
