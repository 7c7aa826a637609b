"""Removing sandboxes nobody uses any more: stale heartbeat, or their owner crashed.

Every authorised request to a sandbox (actions, and ``heartbeat()`` from its owner) resets its
idle clock, which ``/alive`` reports. A Docker sandbox idle for longer than the limit — or one
whose server no longer answers, counted from when it was created — is removed.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container
from pydantic import BaseModel

from app.runtime.client import SandboxClient
from app.runtime.docker.copied_files import FILES_LABEL, remove_volumes
from app.runtime.docker.exec_bridge import idle_seconds
from app.runtime.docker.runtime import LABEL, SERVER_SOCKET

log = logging.getLogger(__name__)


class SandboxInfo(BaseModel):
    name: str
    session_id: str
    status: str
    created: datetime
    idle_seconds: float | None


async def _idle(socket: str | None) -> float | None:
    if not socket:
        return None
    client = SandboxClient("http://sandbox", token="", unix_socket=socket)  # /alive needs none
    try:
        return await client.idle_seconds()
    finally:
        await client.close()


async def _idle_of(container: Container) -> float | None:
    """Asked at the server's socket: ours on this machine, or through an exec when the
    sandbox's files are copied (its socket is on the engine's machine)."""
    labels = container.labels
    if labels.get(FILES_LABEL) == "copied":
        return await asyncio.to_thread(
            idle_seconds, container, SERVER_SOCKET, labels.get("chronicle.user", "")
        )
    return await _idle(labels.get("chronicle.socket"))


async def list_sandboxes(engine: docker.DockerClient | None = None) -> list[SandboxInfo]:
    engine = engine or docker.from_env()
    containers = await asyncio.to_thread(
        engine.containers.list, all=True, filters={"label": f"{LABEL}=1"}
    )
    found = []
    for container in containers:
        labels = container.labels
        created = datetime.fromisoformat(
            labels.get("chronicle.created", "1970-01-01T00:00:00+00:00")
        )
        idle = await _idle_of(container) if container.status == "running" else None
        found.append(
            SandboxInfo(
                name=container.name,
                session_id=labels.get("chronicle.session", ""),
                status=container.status,
                created=created,
                idle_seconds=idle,
            )
        )
    return found


def remove_sandbox(engine: docker.DockerClient, container: Container) -> None:
    """Remove a sandbox's container and what it leaves beside it: its volumes (copied
    files), or its private socket directory on this machine (blocking)."""
    socket = container.labels.get("chronicle.socket")
    container.remove(force=True)
    if container.labels.get(FILES_LABEL) == "copied":
        remove_volumes(engine, container.labels.get("chronicle.session", ""))
    if socket:
        shutil.rmtree(Path(socket).parent, ignore_errors=True)


async def reap(
    older_than: float,
    engine: docker.DockerClient | None = None,
    *,
    sessions: Collection[str] | None = None,
) -> list[SandboxInfo]:
    """Remove sandboxes idle (or, if not answering, alive) for longer than ``older_than`` s.

    ``sessions`` limits it to those sessions' sandboxes (default: every Chronicle sandbox).
    """
    engine = engine or docker.from_env()
    removed = []
    now = datetime.now(UTC)
    for info in await list_sandboxes(engine):
        if sessions is not None and info.session_id not in sessions:
            continue
        age = (now - info.created).total_seconds()
        quiet = info.idle_seconds if info.idle_seconds is not None else age
        if quiet <= older_than:
            continue
        try:
            container = await asyncio.to_thread(engine.containers.get, info.name)
            await asyncio.to_thread(remove_sandbox, engine, container)
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:
            if exc.status_code == 409:  # someone else is removing it right now
                continue
            raise
        log.info("reaped sandbox %s (quiet for %.0f s)", info.name, quiet)
        removed.append(info)
    return removed


async def reap_forever(
    older_than: float, every: float, *, sessions: Collection[str] | None = None
) -> None:
    """The service's periodic reaper; a Docker engine that is away only delays it."""
    while True:
        try:
            await reap(older_than, sessions=sessions)
        except docker.errors.DockerException as exc:
            log.warning("sandbox reaper: %s", exc)
        await asyncio.sleep(every)
