"""Paths the jail's unprivileged user could not reach, made reachable for that jail alone.

When Chronicle runs as root, the jail runs as an unprivileged uid (``sandbox_user``), and
bubblewrap, started as that uid, must find the workspace, the server package and the Python
it binds by path. They may lie below a directory only root may enter (``/root``, a data
directory of mode 0700). So the sandbox's child, while still root and before it becomes that
uid, enters a mount namespace of its own and binds each of them onto an empty directory of a
private, traversable-only directory (``mount_points``); bubblewrap then binds them from there
to their own paths inside the jail. The binds exist in that child's namespace only: nothing
changes on the host, and they end with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import tempfile
import time
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
PREFIX = "chronicle-jail-"


def mount_points(sources: list[Path]) -> tuple[Path, dict[Path, Path]]:
    """A new directory (mode 0711: entered, not listed) with an empty directory for each of
    ``sources``; the directory, and where bubblewrap finds each source."""
    base = Path(tempfile.mkdtemp(prefix=PREFIX))
    os.chmod(base, 0o711)
    points: dict[Path, Path] = {}
    for number, source in enumerate(sources):
        point = base / str(number)
        point.mkdir(mode=0o755)
        points[source] = point
    return base, points


def remove_stale(older_than: float) -> None:
    """Remove the mount-point directories a crashed owner left: ours, old, and empty on the
    host (the binds were its jail's alone; ``rmdir`` never removes anything but empty ones)."""
    for base in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            info = base.lstat()
            if info.st_uid != os.geteuid() or time.time() - info.st_mtime < older_than:
                continue
            for point in base.iterdir():
                with contextlib.suppress(OSError):
                    point.rmdir()
            base.rmdir()
        except OSError:
            continue


def bind_privately(pairs: list[tuple[bytes, bytes]]) -> None:
    """In a child before exec, as root: a mount namespace of its own in which each source is
    bound onto its mount point (async-signal-safe calls only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        _fail("unshare")
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        _fail("mount --make-rprivate /")
    for source, point in pairs:
        if libc.mount(source, point, None, MS_BIND | MS_REC, None) != 0:
            _fail(f"mount --bind {os.fsdecode(source)}")


def _fail(what: str) -> None:
    code = ctypes.get_errno() or errno.EPERM
    raise OSError(code, f"{what}: {os.strerror(code)}")
