"""Private directories for sandbox sockets and tokens: ours alone, checked before use.

The sockets live under the temp dir, where any local user can create entries. A user who
pre-creates (squats) the directory we would use can read the token we put there and answer
in the sandbox's place. So a directory is created mode 0700 by us or, when it already
exists, used only if ``lstat`` shows a real directory (not a symlink) owned by us that no one
else can write to. A squatted one is never used: the Docker runtime then makes a private
directory of its own (``own_private_dir``: a new, unguessable name) and warns, so one user's
squat does not stop every sandbox of another.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from app.runtime.errors import SandboxStartError

log = logging.getLogger(__name__)

PRIVATE_MODE = 0o700


class SquattedDirectoryError(SandboxStartError):
    """A directory we would use is not ours alone (``verify_private_dir``)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"refusing to use {path} for sandbox sockets: it {problem}, so another user could "
            f"read the sandbox's token or answer in its place. Remove it (rm -rf {path}) and "
            "start again."
        )
        self.path = path
        self.problem = problem


def _refuse(path: Path, problem: str) -> SquattedDirectoryError:
    return SquattedDirectoryError(path, problem)


def verify_private_dir(path: Path) -> None:
    """Raise ``SandboxStartError`` unless ``path`` is our own directory, 0700.

    A directory of ours that others may only read (an older Chronicle made it 0755) is
    tightened to 0700: nobody else can have put anything in it. One that others could write
    to, one owned by someone else, and a symlink are refused.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise SandboxStartError(f"the sandbox socket directory {path} vanished") from None
    if stat.S_ISLNK(info.st_mode):
        raise _refuse(path, "is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, "is not a directory")
    if info.st_uid != os.geteuid():
        raise _refuse(path, f"is owned by uid {info.st_uid}, not by us (uid {os.geteuid()})")
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _refuse(path, f"has mode {mode:04o}: others may write to it (must be 0700)")
    if mode != PRIVATE_MODE:
        log.info("tightening %s from mode %04o to 0700", path, mode)
        os.chmod(path, PRIVATE_MODE, follow_symlinks=False)


def verify_holder(path: Path) -> None:
    """The directory holding a private one must not let others rename it away and put
    another in its place after we checked: not writable by others, or sticky like /tmp."""
    info = os.stat(path)
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        raise SandboxStartError(
            f"refusing to keep sandbox sockets in {path}: anyone may rename or replace what is "
            "in it (world-writable without the sticky bit). Point TMPDIR at a safe directory "
            f"or run chmod +t {path}."
        )


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (its parent must exist) 0700, or verify the one that is there."""
    verify_holder(path.parent)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, PRIVATE_MODE)
        os.chmod(path, PRIVATE_MODE)  # whatever the umask took away, nothing more
    verify_private_dir(path)


def own_private_dir(prefix: str) -> Path:
    """A new 0700 directory under the temp dir whose name nobody could guess in advance
    (``mkdtemp``: created, never found), so nobody can have squatted it."""
    holder = Path(tempfile.gettempdir())
    verify_holder(holder)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=holder))
    verify_private_dir(path)
    return path


def fresh_private_dir(parent: Path, name: str) -> Path:
    """An empty 0700 directory ``name`` in the private directory ``parent``.

    A leftover of a crashed run is removed first; inside a verified parent only we (and the
    sandboxes we handed subdirectories to) can have made it.
    """
    ensure_private_dir(parent)
    path = parent / name
    if os.path.lexists(path):
        if os.path.islink(path) or not os.path.isdir(path):
            os.unlink(path)
        else:
            shutil.rmtree(path)
    os.mkdir(path, PRIVATE_MODE)
    os.chmod(path, PRIVATE_MODE)
    verify_private_dir(path)
    return path


def write_secret(path: Path, secret: str, *, uid: int, gid: int) -> None:
    """Write ``secret`` to a new file, mode 0600, owned by ``uid:gid`` (never an old file)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, secret.encode())
        if (uid, gid) != (os.geteuid(), os.getegid()):
            os.fchown(fd, uid, gid)
    finally:
        os.close(fd)
