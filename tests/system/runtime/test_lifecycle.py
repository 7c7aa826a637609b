"""A session's sandbox start is recorded: starting, then ready (with the image digest) or failed."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from app.runtime import LocalRuntime, Runtime, SandboxStartError
from app.runtime.docker.runtime import DockerRuntime
from app.runtime.lifecycle import start_sandbox
from app.store import EventStore
from tests.support.sandboxes import sandbox_settings


@pytest.mark.parametrize("kind", ["local", "docker"])
async def test_start_is_recorded_with_the_image_digest(
    store: EventStore, tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    session = uuid.uuid4()
    runtime: Runtime
    if kind == "docker":
        request.getfixturevalue("docker_ready")
        config = sandbox_settings(tmp_path).runtime_config().docker
        runtime = DockerRuntime(tmp_path / "ws", session, config=config)
    else:
        runtime = LocalRuntime(tmp_path / "ws")
    try:
        await start_sandbox(store, session, runtime, ready_timeout=60)
    finally:
        await runtime.close()
    events = await store.read(session)
    assert [e.kind for e in events] == ["runtime.starting", "runtime.ready"]
    ready = events[1].payload
    assert ready["runtime"] == kind and ready["sandbox_id"]
    if kind == "docker":
        assert ready["image_digest"].startswith("sha256:")
        assert ready["sandbox_id"] == f"chronicle-{session}"


async def test_failed_start_is_recorded(store: EventStore, tmp_path: Path) -> None:
    session = uuid.uuid4()
    broken = LocalRuntime(tmp_path / "ws", python="/nonexistent/python3")
    with pytest.raises(SandboxStartError, match="could not run"):
        await start_sandbox(store, session, broken, ready_timeout=5)
    events = await store.read(session)
    assert [e.kind for e in events] == ["runtime.starting", "runtime.failed"]
    assert "could not run" in events[1].payload["message"]
