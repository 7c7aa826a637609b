"""A sandbox's files on an engine that does not see the worker's (``files = "copied"``).

Two Docker volumes of the session's, on its engine, stand in for the bind mounts:

- ``chronicle-ws-<session>`` at /workspace, filled from the worker's workspace before the
  container starts and copied back into it when the sandbox closes (``workspace_copy``);
- ``chronicle-run-<session>`` at /run/chronicle, where the server finds its token (a 0600
  file it reads and deletes) and makes its socket, reached through ``exec_bridge``.

A fresh volume's root belongs to root, and the sandbox's user may not chown (it has no
capability): a short-lived helper container, root with only ``CAP_CHOWN`` and no network,
hands both roots to that user first. Files are put in with the engine's archive API, which
writes into a created container's volumes before it runs (its root file system is read-only).

A volume left behind (the worker died before its sandbox closed) holds the newest state of
the workspace: the next start on that engine copies it back before anything else.
"""

from __future__ import annotations

import contextlib
import io
import logging
import tarfile
import time
from pathlib import Path
from typing import Any

import docker
import docker.errors

from app.runtime.docker.kind import WORKSPACE
from app.runtime.docker.workspace_copy import WorkspaceCopyError, pack, spool_bounded, unpack
from app.runtime.errors import SandboxStartError
from app.runtime.sandbox_user import SandboxUser

log = logging.getLogger(__name__)

#: The label that marks a sandbox (and its volumes) as having copied files.
FILES_LABEL = "chronicle.files"
#: Where the server's socket and token are inside the container.
RUN_DIR = "/run/chronicle"
HELPER_TIMEOUT = 60.0
#: Slack over the limits when bounding what comes back (the tar's own headers, say).
MARGIN = 64 << 20


def workspace_volume(session_id: str) -> str:
    return f"chronicle-ws-{session_id}"


def run_volume(session_id: str) -> str:
    return f"chronicle-run-{session_id}"


class CopiedFiles:
    """The session's volumes on one engine, and the copies in and out of them (blocking)."""

    def __init__(
        self, engine: docker.DockerClient, session_id: str, image: str, labels: dict[str, str]
    ) -> None:
        self.engine = engine
        self.session_id = session_id
        self.image = image
        self.labels = {**labels, FILES_LABEL: "copied", "chronicle.session": session_id}
        #: bytes put in at the start: what may come back is bounded by it plus the limit
        self.packed_bytes = 0

    def mounts(self) -> dict[str, dict[str, str]]:
        """The ``volumes`` argument of the sandbox's container (``nocopy``: an empty volume
        would otherwise take the image's directory, root's, in place of the root we chowned)."""
        return {
            workspace_volume(self.session_id): {"bind": WORKSPACE, "mode": "rw,nocopy"},
            run_volume(self.session_id): {"bind": RUN_DIR, "mode": "rw,nocopy"},
        }

    def rescue(self, workspace: Path, owner: SandboxUser, limit_mb: int | None) -> bool:
        """Copy a workspace volume left behind back into ``workspace``, then remove it;
        whether there was one."""
        try:
            self.engine.volumes.get(workspace_volume(self.session_id))
        except docker.errors.NotFound:
            return False
        log.warning(
            "sandbox of session %s: its workspace volume was left behind on its engine (its "
            "worker stopped before the sandbox closed); copying it back first",
            self.session_id,
        )
        helper = self.engine.containers.create(
            self.image, ["true"], volumes=self.mounts(), network_mode="none",
            labels={**self.labels, "chronicle.helper": "1"},
        )  # fmt: skip
        try:
            self.bring_back(helper, workspace, owner, limit_mb)
        finally:
            with contextlib.suppress(docker.errors.NotFound):
                helper.remove(force=True)
        self.remove_volumes()
        return True

    def prepare(self, user: SandboxUser) -> None:
        """Fresh volumes whose roots belong to the sandbox's user."""
        self.remove_volumes()
        for name in (workspace_volume(self.session_id), run_volume(self.session_id)):
            self.engine.volumes.create(name, labels=self.labels)
        helper = self.engine.containers.run(
            self.image,
            ["chown", f"{user.uid}:{user.gid}", "/w", "/r"],
            detach=True,
            user="0:0",
            cap_drop=["ALL"],
            cap_add=["CHOWN"],
            security_opt=["no-new-privileges:true"],
            network_mode="none",
            read_only=True,
            volumes={
                workspace_volume(self.session_id): {"bind": "/w", "mode": "rw"},
                run_volume(self.session_id): {"bind": "/r", "mode": "rw"},
            },
            labels={**self.labels, "chronicle.helper": "1"},
        )
        try:
            status = helper.wait(timeout=HELPER_TIMEOUT)
            if status.get("StatusCode") != 0:
                logs = helper.logs().decode(errors="replace").strip()
                raise SandboxStartError(f"could not prepare the sandbox's volumes: {logs}")
        finally:
            with contextlib.suppress(docker.errors.NotFound):
                helper.remove(force=True)

    def fill(self, container: Any, workspace: Path, user: SandboxUser, token: str) -> None:
        """Put the workspace and the server's token into the created container's volumes."""
        started = time.monotonic()
        with pack(workspace, user) as tar:
            self.packed_bytes = tar.seek(0, io.SEEK_END)
            tar.seek(0)
            if not container.put_archive(WORKSPACE, tar):
                raise SandboxStartError("the engine refused the sandbox's workspace")
        if not container.put_archive(RUN_DIR, _token_tar(token, user)):
            raise SandboxStartError("the engine refused the sandbox's token")
        log.info(
            "workspace of session %s copied to its engine (%.1f MB, %.1f s)",
            self.session_id, self.packed_bytes / (1 << 20), time.monotonic() - started,
        )  # fmt: skip

    def bring_back(
        self, container: Any, workspace: Path, owner: SandboxUser, limit_mb: int | None
    ) -> None:
        """Make ``workspace`` what the container's /workspace holds."""
        started = time.monotonic()
        limit = self._limit(limit_mb)
        chunks, _ = container.get_archive(WORKSPACE)
        with spool_bounded(chunks, limit) as tar:
            size = tar.seek(0, io.SEEK_END)
            tar.seek(0)
            unpack(tar, workspace, top=Path(WORKSPACE).name, owner=owner)
        log.info(
            "workspace of session %s copied back from its engine (%.1f MB, %.1f s)",
            self.session_id, size / (1 << 20), time.monotonic() - started,
        )  # fmt: skip

    def _limit(self, limit_mb: int | None) -> int:
        """What a sandbox may hand back: what it was given (10 GB for a volume left behind,
        whose start we did not see) plus what it may add (the server's workspace limit, else
        10 GB)."""
        given = self.packed_bytes or (10 << 30)
        allowed = (limit_mb << 20) if limit_mb is not None else (10 << 30)
        return given + allowed + MARGIN

    def remove_volumes(self) -> None:
        remove_volumes(self.engine, self.session_id)


def remove_volumes(engine: docker.DockerClient, session_id: str) -> None:
    """The session's volumes gone (after its container: a volume in use cannot go)."""
    for name in (workspace_volume(session_id), run_volume(session_id)):
        with contextlib.suppress(docker.errors.NotFound):
            engine.volumes.get(name).remove(force=True)


def _token_tar(token: str, user: SandboxUser) -> bytes:
    data = token.encode()
    info = tarfile.TarInfo("token")
    info.size, info.mode, info.uid, info.gid = len(data), 0o600, user.uid, user.gid
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


__all__ = ["CopiedFiles", "WorkspaceCopyError", "remove_volumes"]
