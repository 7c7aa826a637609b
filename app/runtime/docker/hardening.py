"""What a sandbox container may do: the Docker options that confine it, and the disk quota.

A command in the sandbox runs as an unprivileged user with no capabilities at all (not even in
the bounding set), cannot gain any (``no-new-privileges``: setuid binaries do nothing), cannot
write the image (read-only root; ``/tmp`` and the home are tmpfs, ``nosuid,nodev``), cannot
swap past its memory limit, and cannot fork past its pids limit.

The writable layer's size quota (``storage_opt``) only works on some storage drivers (overlay2
on xfs with ``pquota``, btrfs, zfs, devicemapper). Whether an engine enforces it is learned by
trying: the engine refuses the option up front, and the sandbox then starts without it, logged
once per engine.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import docker.errors

from app.runtime.docker.config import DockerConfig
from app.runtime.sandbox_user import SandboxUser

log = logging.getLogger(__name__)

HOME = "/home/sandbox"
TMPFS_FLAGS = "rw,nosuid,nodev,exec"


def confinement(config: DockerConfig, user: SandboxUser) -> dict[str, Any]:
    """Keyword arguments of ``containers.run`` that confine the sandbox (quota aside)."""
    size = config.tmpfs_size
    return {
        "user": user.spec,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "read_only": True,
        "tmpfs": {
            "/tmp": f"{TMPFS_FLAGS},size={size},mode=1777",
            HOME: f"{TMPFS_FLAGS},size={size},mode=0700,uid={user.uid},gid={user.gid}",
        },
        "mem_limit": config.memory,
        "memswap_limit": config.memory,
        "pids_limit": config.pids_limit,
        "nano_cpus": int(config.cpus * 1e9),
        "network_mode": "bridge" if config.network else "none",
        "init": True,
    }


def environment() -> dict[str, str]:
    """The server's (and so the shell's) environment besides what the user named in
    ``sandbox_env``: no secret of ours, a writable home, and a user name for tools that ask
    the environment (a uid the image does not name has none in /etc/passwd)."""
    return {"HOME": HOME, "USER": "sandbox", "LOGNAME": "sandbox", "TMPDIR": "/tmp"}


def is_quota_refusal(exc: docker.errors.APIError) -> bool:
    """The engine's "this storage driver cannot limit size" answer to ``storage_opt``."""
    text = str(exc.explanation or exc).lower()
    return "storage-opt" in text or "storage opt" in text or "storageopt" in text


class QuotaSupport:
    """Which engines refused ``storage_opt`` size, so it is tried once per engine."""

    def __init__(self) -> None:
        self._refused: set[str] = set()
        self._lock = threading.Lock()

    def worth_trying(self, engine: str) -> bool:
        with self._lock:
            return engine not in self._refused

    def refused(self, engine: str, reason: str) -> None:
        with self._lock:
            first = engine not in self._refused
            self._refused.add(engine)
        if first:
            log.warning(
                "the Docker engine at %s cannot limit a container's disk (%s); sandboxes start "
                "without sandbox_disk_quota there (their root is read-only; /tmp and the home "
                "are bounded by sandbox_tmpfs_size)",
                engine,
                reason,
            )


#: One per process: an engine's storage driver does not change while we run.
QUOTA_SUPPORT = QuotaSupport()
