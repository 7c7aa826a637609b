"""A file rewritten whole or not at all: the new bytes go to a file beside it (same
directory, so the rename cannot cross file systems), with its mode (and its owner, where
this process may give it), are flushed to the disk, and the new file is renamed over the
old one; then the directory is synced, so the rename itself survives a crash.

The old bytes are no longer any file's, but the file system may keep them in free blocks
until they are reused: a rewrite is not a secure erase (docs/erasure.md says so).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from app.errors import ChronicleError


class NotRewritten(ChronicleError):
    """The file was left as it was; the message says why."""


def replace_file(path: Path, write: Callable[[Path], None]) -> None:
    """``write(draft)`` fills a new file beside ``path``, which then replaces it (see the
    module). If ``write`` raises, ``path`` is left as it was and the draft removed."""
    if path.is_symlink():
        raise NotRewritten(f"{path} is a symbolic link: rewrite the file it points to")
    before = path.stat()
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".redacting", dir=path.parent)
    draft = Path(name)
    try:
        os.fchmod(fd, stat.S_IMODE(before.st_mode))
        with contextlib.suppress(PermissionError):  # only root gives a file away
            os.fchown(fd, before.st_uid, before.st_gid)
        os.close(fd)
        fd = -1
        write(draft)
        os.chmod(draft, stat.S_IMODE(before.st_mode))  # a writer that made the file anew
        sync_file(draft)
        os.replace(draft, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        draft.unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


def sync_file(path: Path) -> None:
    """Make a file's bytes durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_directory(directory: Path) -> None:
    """Make the names in ``directory`` (a rename into it) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
