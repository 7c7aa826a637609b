"""A workspace carried to an engine that does not see the worker's files, and back.

A sandbox on a remote engine (``files = "copied"``) works on a Docker volume; the worker's
directory stays the workspace that counts (its diff, its checkpoints, the next run). ``pack``
makes the tar the volume is filled from: every entry owned by the sandbox's user, links kept
as links, sockets, pipes and devices left out. ``unpack`` makes the worker's directory what
the volume holds when the sandbox closes.

What comes back was written by the sandbox, so it is untrusted: the tar is read through
Python's ``data`` extraction filter (no absolute names, no ``..``, nothing written through a
link leading out, no hard link out, no device or pipe, no setuid bit; a symbolic link is kept
as the name it is), a member the filter refuses is left out and named in the log, and the
whole tar is bounded in bytes. It is unpacked into a staging directory first, so a tar that
fails half-way leaves the workspace as it was; only then are the workspace's entries replaced.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from app.runtime.errors import SandboxError
from app.runtime.sandbox_user import SandboxUser

log = logging.getLogger(__name__)

#: Chunks of the tar written to the spool file as they come.
CHUNK = 1 << 20


class WorkspaceCopyError(SandboxError):
    """The workspace could not be carried to or from its sandbox; the message says why."""


def pack(workspace: Path, user: SandboxUser) -> IO[bytes]:
    """A tar of ``workspace``'s contents, owned by ``user``, in a temporary file at its
    start (closed by the caller). Blocking: call it in a thread."""
    spool = tempfile.TemporaryFile(prefix="chronicle-pack-")

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if not (info.isfile() or info.isdir() or info.issym() or info.islnk()):
            return None  # a socket, pipe or device means nothing on another machine
        info.uid, info.gid, info.uname, info.gname = user.uid, user.gid, "", ""
        info.mode &= ~(stat.S_ISUID | stat.S_ISGID)
        return info

    try:
        with tarfile.open(fileobj=spool, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for entry in sorted(os.listdir(workspace)):
                tar.add(workspace / entry, arcname=entry, recursive=True, filter=owned)
    except OSError as exc:
        spool.close()
        raise WorkspaceCopyError(f"could not pack the workspace {workspace}: {exc}") from None
    spool.seek(0)
    return spool


def spool_bounded(chunks: Iterable[bytes], limit: int) -> IO[bytes]:
    """``chunks`` in a temporary file at its start; ``WorkspaceCopyError`` past ``limit``
    bytes (a sandbox that filled its volume beyond what it may keep)."""
    spool = tempfile.TemporaryFile(prefix="chronicle-unpack-")
    size = 0
    try:
        for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise WorkspaceCopyError(
                    f"the sandbox's workspace is over {limit // (1 << 20)} MB; it was not "
                    "copied back (the worker's workspace keeps what it had)"
                )
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def unpack(tar_file: IO[bytes], workspace: Path, *, top: str, owner: SandboxUser) -> list[str]:
    """Make ``workspace`` hold what the tar's directory ``top`` holds (``get_archive`` names
    every member under the directory it was asked for), owned by ``owner`` as a bind-mounted
    sandbox's files would be (when we may chown); the members left out, by name.
    Blocking: call it in a thread."""
    workspace.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".chronicle-copy-", dir=_staging_parent(workspace)))
    left_out: list[str] = []

    def checked(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        name = member.name
        if name == top:
            return None  # the directory itself: the workspace keeps its own mode and owner
        if not name.startswith(top + "/"):
            left_out.append(name)
            return None
        inner = member.replace(name=name[len(top) + 1 :], deep=False)
        if inner.islnk():
            if not inner.linkname.startswith(top + "/"):
                left_out.append(name)
                return None
            inner = inner.replace(linkname=inner.linkname[len(top) + 1 :], deep=False)
        try:
            safe = tarfile.data_filter(inner, path)
        except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError) as exc:
            if not inner.issym():
                left_out.append(f"{name} ({exc})")
                return None
            # A symbolic link is only a name: kept as the sandbox left it (a repository's
            # link to /etc/..., say), as a bind mount would. Nothing is written through it:
            # the filter checks each later member's real path, links resolved.
            safe = tarfile.tar_filter(inner, path)
        except tarfile.FilterError as exc:
            left_out.append(f"{name} ({exc})")
            return None
        return safe.replace(uid=owner.uid, gid=owner.gid, deep=False)

    try:
        try:
            with tarfile.open(fileobj=tar_file, mode="r:") as tar:
                tar.extractall(staging, filter=checked, numeric_owner=True)
        except (tarfile.TarError, OSError) as exc:
            raise WorkspaceCopyError(
                f"could not unpack the sandbox's workspace ({exc}); the worker's workspace "
                "keeps what it had"
            ) from None
        _replace_contents(workspace, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if left_out:
        log.warning(
            "the sandbox's workspace held %d entr%s that were not copied back: %s",
            len(left_out), "y" if len(left_out) == 1 else "ies", ", ".join(left_out[:20]),
        )  # fmt: skip
    return left_out


def _staging_parent(workspace: Path) -> Path | None:
    """Beside the workspace when we may write there (a rename, not a copy), else the temp dir."""
    parent = workspace.parent
    return parent if os.access(parent, os.W_OK | os.X_OK) else None


def _replace_contents(workspace: Path, staging: Path) -> None:
    """The workspace's entries become the staging directory's (the directory itself stays)."""
    fresh = set(os.listdir(staging))
    for name in os.listdir(workspace):
        _remove(workspace / name)
    for name in sorted(fresh):
        shutil.move(str(staging / name), str(workspace / name))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
