"""Sandboxes in Docker containers, one per session, through the docker SDK.

The container runs the action server on a Unix socket in a host directory mounted at
/run/chronicle, so it is reachable with the container's networking switched off (the default:
commands get no network unless ``DockerConfig.network`` is on). The workspace is a bind mount.

Per session, ``<tmp>/chronicle-<uid>/<session>/`` is private (0700, ours, checked: see
``private_dir``). Its subdirectory ``mount/`` is handed to the container's user and mounted
at /run/chronicle. The server's token reaches it as a 0600 file there, which the server
reads and deletes: never an environment variable, which ``/proc/1/environ`` and ``docker
inspect`` would show. When the server's socket appears in ``mount/`` (before any command can
run), it is moved up into the session directory, which the sandbox cannot write: we and the
reaper then connect to a path no command in the sandbox can swap for a socket of its own.
The container runs as an unprivileged user (``sandbox_user``) with the confinement of
``hardening``.

An engine that does not see the worker's files (``files = "copied"``, a remote engine) gets
volumes instead of the bind mounts (``copied_files``): the workspace is copied in before the
container starts and back when it closes, and the server's socket, inside the container, is
reached through ``docker exec`` (``exec_bridge``), bridged to a socket in the same private
session directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import stat
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import docker
import docker.errors
from docker.models.containers import Container

from app.runtime.attached import ClientRuntime
from app.runtime.client import SandboxClient
from app.runtime.docker.config import DockerConfig
from app.runtime.docker.copied_files import FILES_LABEL, RUN_DIR, CopiedFiles
from app.runtime.docker.exec_bridge import ExecBridge
from app.runtime.docker.hardening import (
    QUOTA_SUPPORT,
    QuotaSupport,
    confinement,
    environment,
    is_quota_refusal,
)
from app.runtime.docker.hosts import FilesMode
from app.runtime.docker.kind import WORKSPACE
from app.runtime.docker.private_dir import (
    SquattedDirectoryError,
    fresh_private_dir,
    own_private_dir,
    write_secret,
)
from app.runtime.docker.workspace_copy import WorkspaceCopyError
from app.runtime.errors import SandboxStartError
from app.runtime.image import ensure_image
from app.runtime.sandbox_user import SandboxUser, prepare_workspace
from app.runtime.special_bits import clear_special_bits

log = logging.getLogger(__name__)

LABEL = "chronicle.sandbox"
SOCKET_NAME = "sandbox.sock"
TOKEN_NAME = "token"
#: What an engine that does not see the worker's files needs (docs/sandboxes.md).
UNSEEN_HINT = (
    "an engine must see the worker's workspaces and socket directory at the same paths, or "
    'copy them: docker_files = "copied", or ?files=copied on its docker_hosts entry '
    '(docs/sandboxes.md, "Files: shared or copied")'
)
#: The subdirectory of the session's private directory that the container sees.
MOUNT_NAME = "mount"
#: Where the socket directory appears inside the container.
MOUNT = RUN_DIR
#: The server's socket as the container sees it.
SERVER_SOCKET = f"{MOUNT}/{SOCKET_NAME}"
#: How often a copied sandbox is asked whether it is ready (each ask is an exec).
COPIED_POLL = 0.2


def default_socket_root() -> Path:
    """Short host paths for the sockets (a Unix socket path must stay under ~100 bytes)."""
    return Path(tempfile.gettempdir()) / f"chronicle-{os.geteuid()}"


def server_command(config: DockerConfig) -> list[str]:
    """The action server's command line: socket and token file in the private mount (the
    run volume, for copied files: the same path)."""
    return [
        *("python3", "-m", "chronicle_sandbox", "--workspace", WORKSPACE),
        *("--unix-socket", SERVER_SOCKET, "--token-file", f"{MOUNT}/{TOKEN_NAME}"),
        *("--no-output-timeout", str(config.no_output_timeout)),
        *(
            ("--limit-workspace-mb", str(config.workspace_limit_mb))
            if config.workspace_limit_mb is not None
            else ()
        ),
    ]


def container_name(session_id: UUID | str) -> str:
    return f"chronicle-{session_id}"


class DockerRuntime(ClientRuntime):
    name = "docker"

    def __init__(
        self,
        workspace: str | Path,
        session_id: UUID | str,
        *,
        config: DockerConfig | None = None,
        client: docker.DockerClient | None = None,
        socket_root: Path | None = None,
        quota_support: QuotaSupport | None = None,
        labels: dict[str, str] | None = None,
        files: FilesMode | None = None,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.session_id = str(session_id)
        self.config = config or DockerConfig()
        self._docker = client
        self.container: Container | None = None
        self.client: SandboxClient | None = None
        self.image_tag: str | None = None
        self.image_id: str | None = None
        self.socket_root = socket_root or default_socket_root()
        self.socket_dir = self.socket_root / self.session_id
        self.quota_support = quota_support or QUOTA_SUPPORT
        self._made_socket_dir = False  # only a directory we made is ours to remove
        #: the private root made in place of a squatted ``socket_root``; removed on close
        self._own_root: Path | None = None
        #: labels besides ours (a host pool's ``chronicle.host``)
        self.extra_labels = dict(labels or {})
        #: shared or copied files (None: decided from the config and the engine at start)
        self.files: FilesMode | None = files
        self._copied: CopiedFiles | None = None
        self._bridge: ExecBridge | None = None
        self._user: SandboxUser | None = None

    @property
    def sandbox_id(self) -> str:
        """The container's name (what ``runtime.ready`` records and ``docker ps`` shows)."""
        return container_name(self.session_id)

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
            self.image_tag, self.image_id = ensure_image(engine, self.config.base_image)
        except (RuntimeError, docker.errors.DockerException) as exc:
            raise SandboxStartError(str(exc)) from None
        if self.files is None:
            self.files = self.config.files_for(None, str(engine.api.base_url))
        try:
            user = prepare_workspace(self.workspace, self.config.uid)
            token = self._private_socket_dir(user)
        except OSError as exc:
            raise SandboxStartError(
                f"could not prepare the sandbox's workspace or socket directory: {exc}"
            ) from None
        self._user = user
        name = container_name(self.session_id)
        with contextlib.suppress(docker.errors.NotFound):
            engine.containers.get(name).remove(force=True)  # a leftover of a crashed run
        try:
            if self.files == "copied":
                self.container = self._run_copied(engine, name, user, token)
            else:
                self.container = self._run(engine, name, user)
        except docker.errors.DockerException as exc:
            raise SandboxStartError(f"could not start the sandbox container: {exc}") from None
        except (WorkspaceCopyError, OSError) as exc:
            raise SandboxStartError(f"could not copy the workspace to its engine: {exc}") from None
        self.client = SandboxClient(
            "http://sandbox", token, unix_socket=str(self.socket_dir / SOCKET_NAME)
        )

    def _run_copied(
        self, engine: docker.DockerClient, name: str, user: SandboxUser, token: str
    ) -> Container:
        """The container on volumes: a leftover's workspace rescued, fresh volumes filled
        before it starts, and the bridge to its server's socket."""
        assert self.image_tag is not None
        copied = CopiedFiles(engine, self.session_id, self.image_tag, self.extra_labels)
        self._copied = copied
        copied.rescue(self.workspace, user, self.config.workspace_limit_mb)
        copied.prepare(user)
        container = self._run(engine, name, user, start=False)
        copied.fill(container, self.workspace, user, token)
        container.start()
        self._bridge = ExecBridge(
            engine.api, container.id, SERVER_SOCKET, self.socket_dir / SOCKET_NAME, user.spec
        )
        return container

    @property
    def mount_dir(self) -> Path:
        return self.socket_dir / MOUNT_NAME

    def _private_socket_dir(self, user: SandboxUser) -> str:
        """A fresh private directory for the socket, and in it the container's ``mount/``
        with a new token, handed to the container's user; the token. (Copied files: the
        directory only, for the bridge's socket; the token goes into the run volume.)"""
        self.socket_dir = self._fresh_socket_dir()
        self._made_socket_dir = True
        token = secrets.token_urlsafe(32)
        if self.files == "copied":
            return token
        mount = fresh_private_dir(self.socket_dir, MOUNT_NAME)
        write_secret(mount / TOKEN_NAME, token, uid=user.uid, gid=user.gid)
        if (user.uid, user.gid) != (os.geteuid(), os.getegid()):
            os.chown(mount, user.uid, user.gid)  # the server listens in it
        return token

    def _fresh_socket_dir(self) -> Path:
        """The session's directory in ``socket_root``; where another user squatted that
        (made it first, made it writable, or a link), in a private root of its own instead."""
        if self._own_root is not None:  # a restart: the root made at the first start
            return fresh_private_dir(self._own_root, self.session_id)
        try:
            return fresh_private_dir(self.socket_root, self.session_id)
        except SquattedDirectoryError as exc:
            if exc.path != self.socket_root:
                raise
            self._own_root = own_private_dir(f"chronicle-{os.geteuid()}-")
            log.warning(
                "the sandbox socket directory %s %s, so it is not used (another user could "
                "read a sandbox's token there); this sandbox's socket is in %s instead. Remove "
                "it (rm -rf %s) to stop this warning",
                self.socket_root, exc.problem, self._own_root, self.socket_root,
            )  # fmt: skip
            return fresh_private_dir(self._own_root, self.session_id)

    def _claim_socket(self) -> None:
        """Move the server's new socket out of the sandbox's reach (see the module's doc)."""
        final = self.socket_dir / SOCKET_NAME
        if self.files == "copied" or os.path.lexists(final):
            return  # copied: the bridge's socket, ours from the start
        fresh = self.mount_dir / SOCKET_NAME
        try:
            info = os.lstat(fresh)
        except FileNotFoundError:
            return  # not listening yet
        if not stat.S_ISSOCK(info.st_mode):
            raise SandboxStartError(f"the sandbox put a non-socket at {fresh}")
        os.rename(fresh, final)

    def _run(
        self, engine: docker.DockerClient, name: str, user: SandboxUser, *, start: bool = True
    ) -> Container:
        """Run (or only create) the container confined, with the disk quota where the engine
        can enforce it."""
        config = self.config
        copied = self._copied is not None
        options: dict[str, Any] = {
            "name": name,
            "detach": True,
            "command": server_command(config),
            "labels": {
                LABEL: "1",
                "chronicle.session": self.session_id,
                "chronicle.created": datetime.now(UTC).isoformat(),
                "chronicle.heartbeat_interval": str(config.heartbeat_interval),
                **(
                    {FILES_LABEL: "copied", "chronicle.user": user.spec}
                    if copied
                    else {"chronicle.socket": str(self.socket_dir / SOCKET_NAME)}
                ),
                **self.extra_labels,
            },
            "environment": {**config.env, **environment()},
            "volumes": (
                self._copied.mounts()
                if self._copied is not None
                else {
                    str(self.workspace): {"bind": WORKSPACE, "mode": "rw"},
                    str(self.mount_dir): {"bind": MOUNT, "mode": "rw"},
                }
            ),
            **confinement(config, user),
        }
        make = engine.containers.run if start else engine.containers.create
        if not start:
            options.pop("detach")
        quota = config.disk_quota
        # per engine: a pool's Unix sockets all have the base URL http+docker://localhost
        where = self.extra_labels.get("chronicle.host") or str(engine.api.base_url)
        if quota and self.quota_support.worth_trying(where):
            try:
                return make(self.image_tag, storage_opt={"size": quota}, **options)
            except docker.errors.APIError as exc:
                if not is_quota_refusal(exc):
                    raise
                self.quota_support.refused(where, str(exc.explanation or exc))
                with contextlib.suppress(docker.errors.NotFound):
                    engine.containers.get(name).remove(force=True)
        return make(self.image_tag, **options)

    async def wait_ready(self, timeout: float) -> None:
        client = self._require_client()
        deadline = time.monotonic() + timeout
        poll = COPIED_POLL if self.files == "copied" else 0.02
        while time.monotonic() < deadline:
            await asyncio.to_thread(self._claim_socket)
            if await client.alive():
                return
            if not await asyncio.to_thread(self._running):
                logs = await asyncio.to_thread(self._logs)
                if await asyncio.to_thread(self._unseen):
                    raise SandboxStartError(
                        "the sandbox container exited without reading the token left for its "
                        f"action server in {self.mount_dir}: its engine does not see this "
                        f"machine's files ({UNSEEN_HINT}). Its output: {logs}"
                    )
                raise SandboxStartError(f"the sandbox container exited: {logs}")
            await asyncio.sleep(poll)
        if await asyncio.to_thread(self._unseen):
            raise SandboxStartError(
                f"the sandbox container was not ready after {timeout:g} s and never read the "
                f"token left for its action server in {self.mount_dir}: either its engine does "
                f"not see this machine's files ({UNSEEN_HINT}), or it could not start its "
                "action server in that time"
            )
        raise SandboxStartError(f"the sandbox container was not ready after {timeout:g} s")

    def _unseen(self) -> bool:
        """Whether the container never read the token we left for it: its engine mounted
        another machine's directory of that name (a remote engine), not ours."""
        return (
            self.files != "copied"
            and (self.mount_dir / TOKEN_NAME).exists()
            and not os.path.lexists(self.socket_dir / SOCKET_NAME)
        )

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
        bridge, self._bridge = self._bridge, None
        if bridge is not None:
            await asyncio.to_thread(bridge.close)
        container, self.container = self.container, None
        copied, self._copied = self._copied, None
        try:
            if container is not None and copied is not None:
                await asyncio.to_thread(self._bring_back, copied, container)
            if container is not None:
                await asyncio.to_thread(_remove, container)  # raises when its engine is gone
            if copied is not None:
                await asyncio.to_thread(copied.remove_volumes)
        finally:
            if container is not None:
                # What the sandbox made setuid/setgid stays its uid's; still, none is left.
                await asyncio.to_thread(clear_special_bits, self.workspace)
            if self._made_socket_dir:
                shutil.rmtree(self.socket_dir, ignore_errors=True)
                self._made_socket_dir = False
            if self._own_root is not None:
                shutil.rmtree(self._own_root, ignore_errors=True)
                self._own_root = None

    def _bring_back(self, copied: CopiedFiles, container: Container) -> None:
        """The sandbox's workspace copied back into the worker's; one that cannot be (over
        its limit, not a tar) is logged and dropped with the sandbox, the worker's workspace
        keeping what it had, as a sandbox that wrote nothing would leave it."""
        assert self._user is not None
        try:
            copied.bring_back(container, self.workspace, self._user, self.config.workspace_limit_mb)
        except WorkspaceCopyError as exc:
            log.error("sandbox of session %s: %s", self.session_id, exc)


def _remove(container: Container) -> None:
    with contextlib.suppress(docker.errors.NotFound):
        container.remove(force=True)
