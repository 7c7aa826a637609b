"""Clear setuid and setgid bits from a workspace: when a sandbox closes and after a restore.

A sandbox may leave ``chmod 4755`` on a file it owns; on the host, that file runs as its
owner for whoever runs it. The sandbox's uid is unprivileged, so this is defence in depth, but
a workspace should hold no such file either way. The walk never follows a link: each entry is
looked at with ``lstat`` and opened ``O_PATH | O_NOFOLLOW``, checked again on that descriptor,
and its mode changed through the descriptor (``/proc/self/fd``, which names that very inode),
so a link swapped in meanwhile is left alone, not followed.

A regular file with more than one hard link may be a host file linked into the workspace (a
sandbox may link a file it can see where ``fs.protected_hardlinks`` is off, ``/usr/bin/passwd``
say, when the workspace shares its file system): changing its mode would change the host's
file. Such a file is changed only when it belongs to the workspace's owner and that owner is
not root (the sandbox's own file, linked twice); any other is left alone, with a warning.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

SPECIAL = stat.S_ISUID | stat.S_ISGID


def clear_special_bits(root: Path) -> int:
    """Clear setuid/setgid on ``root`` and every file and directory under it; how many."""
    try:
        top = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0  # gone, or a link: nothing of ours to clear
    try:
        owner = os.fstat(top).st_uid
        cleared = _clear(top, owner)
    finally:
        os.close(top)
    for _, dirs, files, dir_fd in os.fwalk(root, follow_symlinks=False):
        for name in (*dirs, *files):
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            if not info.st_mode & SPECIAL or not _regular_or_directory(info.st_mode):
                continue
            try:
                fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                cleared += _clear(fd, owner)
            finally:
                os.close(fd)
    if cleared:
        log.warning("cleared setuid/setgid bits of %d entries in %s", cleared, root)
    return cleared


def _regular_or_directory(mode: int) -> bool:
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _clear(fd: int, owner: int) -> int:
    info = os.fstat(fd)
    if not info.st_mode & SPECIAL or not _regular_or_directory(info.st_mode):
        return 0
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and (info.st_uid != owner or owner == 0):
        log.warning(
            "left the setuid/setgid bits of inode %d (uid %d) alone: it has %d hard links, "
            "one may be a file outside the workspace",
            info.st_ino,
            info.st_uid,
            info.st_nlink,
        )
        return 0
    with contextlib.suppress(OSError):  # not ours to change (another user's file)
        os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(info.st_mode) & ~SPECIAL)
        return 1
    return 0
