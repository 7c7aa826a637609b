"""Sandboxes in Docker containers, one per session, through the docker SDK.

The container runs the action server on a Unix socket in a host directory mounted at
/run/chronicle, so it is reachable with the container's networking switched off (the default:
commands get no network unless ``sandbox_network`` is on). The workspace is a bind mount.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import docker
import docker.errors
from docker.models.containers import Container

from app.config import Settings
from app.runtime.attached import ClientRuntime
from app.runtime.client import SandboxClient
from app.runtime.errors import SandboxStartError
from app.runtime.image import ensure_image

log = logging.getLogger(__name__)

LABEL = "chronicle.sandbox"
SOCKET_NAME = "sandbox.sock"


def socket_root() -> Path:
    """Short host paths for the sockets (a Unix socket path must stay under ~100 bytes)."""
    return Path(tempfile.gettempdir()) / f"chronicle-{os.getuid()}"


def container_name(session_id: UUID | str) -> str:
    return f"chronicle-{session_id}"


class DockerRuntime(ClientRuntime):
    name = "docker"

    def __init__(
        self,
        workspace: str | Path,
        session_id: UUID | str,
        *,
        settings: Settings | None = None,
        client: docker.DockerClient | None = None,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.session_id = str(session_id)
        self.settings = settings or Settings()
        self._docker = client
        self.container: Container | None = None
        self.client: SandboxClient | None = None
        self.image_tag: str | None = None
        self.image_id: str | None = None
        self.socket_dir = socket_root() / self.session_id

    def _docker_client(self) -> docker.DockerClient:
        if self._docker is None:
            try:
                self._docker = docker.from_env()
                self._docker.ping()
            except docker.errors.DockerException as exc:
                raise SandboxStartError(
                    f"cannot reach the Docker engine ({exc}); is dockerd running and "
                    "DOCKER_HOST right? The local runtime needs no Docker."
                ) from None
        return self._docker

    async def start(self) -> None:
        await asyncio.to_thread(self._start)

    def _start(self) -> None:
        engine = self._docker_client()
        try:
            self.image_tag, self.image_id = ensure_image(engine, self.settings.sandbox_base_image)
        except (RuntimeError, docker.errors.DockerException) as exc:
            raise SandboxStartError(str(exc)) from None
        self.workspace.mkdir(parents=True, exist_ok=True)
        if self.socket_dir.exists():
            shutil.rmtree(self.socket_dir)
        self.socket_dir.mkdir(parents=True)
        name = container_name(self.session_id)
        with contextlib.suppress(docker.errors.NotFound):
            engine.containers.get(name).remove(force=True)  # a leftover of a crashed run
        token = secrets.token_urlsafe(32)
        settings = self.settings
        try:
            self.container = engine.containers.run(
                self.image_tag,
                name=name,
                detach=True,
                labels={
                    LABEL: "1",
                    "chronicle.session": self.session_id,
                    "chronicle.created": datetime.now(UTC).isoformat(),
                    "chronicle.heartbeat_interval": str(settings.sandbox_heartbeat_interval),
                    "chronicle.socket": str(self.socket_dir / SOCKET_NAME),
                },
                environment={
                    "CHRONICLE_SANDBOX_TOKEN": token,
                    "CHRONICLE_SANDBOX_NO_OUTPUT_TIMEOUT": str(settings.sandbox_no_output_timeout),
                },
                volumes={
                    str(self.workspace): {"bind": "/workspace", "mode": "rw"},
                    str(self.socket_dir): {"bind": "/run/chronicle", "mode": "rw"},
                },
                nano_cpus=int(settings.sandbox_cpus * 1e9),
                mem_limit=settings.sandbox_memory,
                pids_limit=settings.sandbox_pids_limit,
                network_mode="bridge" if settings.sandbox_network else "none",
                init=True,
            )
        except docker.errors.DockerException as exc:
            raise SandboxStartError(f"could not start the sandbox container: {exc}") from None
        self.client = SandboxClient(
            "http://sandbox", token, unix_socket=str(self.socket_dir / SOCKET_NAME)
        )

    async def wait_ready(self, timeout: float) -> None:
        client = self._require_client()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if await client.alive():
                return
            if not await asyncio.to_thread(self._running):
                logs = await asyncio.to_thread(self._logs)
                raise SandboxStartError(f"the sandbox container exited: {logs}")
            await asyncio.sleep(0.02)
        raise SandboxStartError(f"the sandbox container was not ready after {timeout:g} s")

    def _running(self) -> bool:
        if self.container is None:
            return False
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return False
        return self.container.status in ("created", "running")

    def _logs(self) -> str:
        if self.container is None:
            return ""
        try:
            return self.container.logs(tail=40).decode(errors="replace").strip() or "no output"
        except docker.errors.DockerException as exc:
            return f"(no logs: {exc})"

    async def close(self) -> None:
        await self._close_client()
        container, self.container = self.container, None
        if container is not None:
            await asyncio.to_thread(_remove, container)
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def _remove(container: Container) -> None:
    with contextlib.suppress(docker.errors.NotFound):
        container.remove(force=True)
