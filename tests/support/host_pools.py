"""A Docker host pool over the tests' own engines (``docker_engines``), and what its tests
ask of the engines."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from app.runtime.docker.host_pool import HOST_LABEL, DockerHostPool
from app.runtime.docker.hosts import DockerHost
from tests.support.sandboxes import sandbox_settings
from tests.support.second_engine import SecondEngine


@contextlib.asynccontextmanager
async def host_pool(
    engines: Sequence[SecondEngine], tmp_path: Path, caps: Sequence[int | None] | None = None
) -> AsyncIterator[DockerHostPool]:
    """A pool of ``engines`` (each capped as ``caps`` says); at the end, every sandbox it
    left on them is removed."""
    config = sandbox_settings(tmp_path).runtime_config().docker
    caps = caps or [None] * len(engines)
    hosts = [DockerHost(url=e.url, max_sandboxes=cap) for e, cap in zip(engines, caps, strict=True)]
    pool = DockerHostPool(config, hosts)
    try:
        yield pool
    finally:
        for engine in engines:
            with contextlib.suppress(Exception):
                for container in engine.client().containers.list(all=True):
                    container.remove(force=True)


def sandboxes_on(engine: SecondEngine, session: str | None = None) -> list[str]:
    """The names of the Chronicle sandboxes on ``engine`` (of ``session`` only, if given),
    each checked to carry its host's label."""
    label = "chronicle.sandbox=1" if session is None else f"chronicle.session={session}"
    found = engine.client().containers.list(all=True, filters={"label": label})
    for container in found:
        assert container.labels[HOST_LABEL] == engine.url, container.labels
    return sorted(container.name for container in found)
