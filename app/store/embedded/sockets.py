"""Where the embedded server's Unix socket lives, and what is left of it after a crash.

The socket is in the server's data directory when that path fits in ``sun_path``, else in a
fresh private temporary directory (0700, a new name, never a shared world-writable one). A
server that died without stopping (kill -9) is started again in the same directory: the
socket's path is part of every URL the processes still running hold (their pools and their
listening connection reconnect to it), so a new directory would strand them.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from app.store.embedded.programs import ServerUser

PORT = 5432
SOCKET_NAME = f".s.PGSQL.{PORT}"
#: sun_path holds 108 bytes with the final NUL; keep a margin.
MAX_SOCKET_PATH = 100
PREFIX = "chronicle-pg-"


def socket_dir(pgdata: Path, user: ServerUser | None, previous: Path | None) -> Path:
    """The directory for a server starting on ``pgdata``: the data directory when the path
    fits, else ``previous`` (the dead server's) when it is ours and private, else a new one;
    a previous one that is not reused is removed."""
    if len(os.fsencode(pgdata / SOCKET_NAME)) <= MAX_SOCKET_PATH:
        remove_socket_dir(pgdata, previous, user)
        return pgdata
    if previous is not None and _ours(previous, user, private=True):
        # PostgreSQL replaces the socket and its lock file, whose pid is dead.
        return previous
    remove_socket_dir(pgdata, previous, user)
    directory = Path(tempfile.mkdtemp(prefix=PREFIX))  # 0700, a new name
    if user is not None:
        os.chown(directory, user.uid, user.gid)
    return directory


def dead_servers_socket_dir(pgdata: Path) -> Path | None:
    """Where a server that died without stopping had its socket, from the pid file it left
    (its fifth line); None when there is no such file."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    return Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None


def remove_socket_dir(pgdata: Path, directory: Path | None, user: ServerUser | None) -> None:
    """Remove a temporary socket directory we made (``/tmp/chronicle-pg-*``, a real
    directory of the server's user), with the socket and lock file the server left."""
    if directory is None or directory == pgdata or not _ours(directory, user, private=False):
        return  # not ours (or a link): never touch what is in it
    with contextlib.suppress(OSError):
        for leftover in directory.iterdir():
            if leftover.name.startswith(SOCKET_NAME):
                leftover.unlink()
        directory.rmdir()


def _ours(directory: Path, user: ServerUser | None, *, private: bool) -> bool:
    """A directory named as we name ours, right in the temporary directory, a real directory
    of the server's user (and, with ``private``, entered by nobody else)."""
    if directory.parent != Path(tempfile.gettempdir()) or not directory.name.startswith(PREFIX):
        return False
    try:
        info = directory.lstat()
    except OSError:
        return False
    owner = user.uid if user is not None else os.geteuid()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != owner:
        return False
    return not (private and info.st_mode & 0o077)
