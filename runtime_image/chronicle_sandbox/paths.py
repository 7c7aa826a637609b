"""Paths an action names, opened beneath the workspace without following links out of it.

Checking a path and then opening it is a race: between the two, a command in the sandbox can
swap a directory for a symlink to anywhere. So nothing here checks and then opens. Every path
is opened relative to a descriptor of the workspace: with ``openat2(RESOLVE_BENEATH)`` where
the kernel has it (Linux >= 5.6), else one component at a time with ``O_NOFOLLOW``, following
symlinks by hand only while they stay inside the workspace. A symlink whose target stays
inside keeps working; one leading out is refused, however fast it is swapped in.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from typing import Any

from .text import printable

SYS_OPENAT2 = 437  # the same number on every architecture Linux added it for
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
MAX_LINKS = 40  # as the kernel: more symlinks than this in one path is a loop
#: openat2 failures that mean "this kernel or seccomp profile cannot", not "no such file".
OPENAT2_UNAVAILABLE = (errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG)
#: openat2 failures the component walk explains better (absolute links inside, escapes).
OPENAT2_RETRY = (errno.EXDEV, errno.ELOOP)


class PathError(ValueError):
    """A path that is outside the workspace or otherwise unusable."""


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _openat2(dir_fd: int, path: str, flags: int, mode: int) -> int | None:
    """``openat2`` beneath ``dir_fd``; None when the kernel (or a seccomp filter) lacks it."""
    libc = _libc()
    if libc is None or not hasattr(libc, "syscall"):
        return None
    how = _OpenHow(flags, mode if flags & (os.O_CREAT | getattr(os, "O_TMPFILE", 0)) else 0)
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_long(dir_fd),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd >= 0:
        return int(fd)
    code = ctypes.get_errno()
    if code in OPENAT2_UNAVAILABLE:
        return None
    raise OSError(code, os.strerror(code), path)


def _parts(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def _readlink(name: str, dir_fd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


class Workspace:
    """Opens paths beneath one workspace directory (or anywhere, without ``confine``)."""

    def __init__(self, root: str, *, confine: bool = True) -> None:
        self.root = os.path.abspath(root)
        self.confine = confine

    # -- names -----------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        """``path`` (relative to the workspace, or absolute in it) as a clean relative path.

        ``..`` is resolved by name here, so ``a/../b`` is ``b`` whatever ``a`` is; a path that
        climbs out of the workspace by name is refused before anything is opened.
        """
        if not path:
            raise PathError("a path is required")
        if "\x00" in path:
            raise PathError("a path cannot contain NUL characters")
        try:
            os.fsencode(path)
        except UnicodeEncodeError:
            raise PathError(
                f"{printable(path)} is not a valid file name: it holds a lone surrogate that "
                "stands for no byte"
            ) from None
        full = os.path.normpath(os.path.join(self.root, path))
        if self.confine and full != self.root and not full.startswith(self.root + os.sep):
            raise PathError(f"{path} is outside the workspace {self.root}")
        return os.path.relpath(full, self.root)

    def shown(self, path: str) -> str:
        """The absolute, normalised form of ``path``: how it appears in answers."""
        return os.path.normpath(os.path.join(self.root, path))

    def _outside(self, path: str) -> PathError:
        return PathError(f"{path} leads outside the workspace {self.root} through a symlink")

    # -- opening ---------------------------------------------------------------------------

    def open(self, path: str, flags: int, mode: int = 0o666, *, make_parents: bool = False) -> int:
        """A descriptor for ``path`` opened with ``flags`` (``O_CLOEXEC`` is always added).

        Raises ``PathError`` for paths leading out and ``OSError`` (``FileNotFoundError``, ...)
        as ``os.open`` would. With ``make_parents``, missing directories on the way are created.
        """
        flags |= os.O_CLOEXEC
        rel = self.relative(path)
        if not self.confine:
            if make_parents:
                os.makedirs(os.path.dirname(self.shown(rel)), exist_ok=True)
            return os.open(self.shown(rel), flags, mode)
        root = self._open_root()
        try:
            try:
                fd = _openat2(root, rel, flags, mode)
            except FileNotFoundError:
                if not make_parents:
                    raise
                fd = None
            except OSError as exc:
                if exc.errno not in OPENAT2_RETRY:
                    raise
                fd = None
            if fd is not None:
                return fd
            return self._walk(root, path, rel, flags, mode, make_parents)
        finally:
            os.close(root)

    def open_directory(self, path: str, *, create: bool = False) -> int:
        """An ``O_PATH`` descriptor of the directory ``path``, opened as ``open`` does; with
        ``create``, it and its missing parents are made first."""
        flags = os.O_PATH | os.O_DIRECTORY
        try:
            return self.open(path, flags, make_parents=create)
        except FileNotFoundError:
            parent, name = os.path.split(self.relative(path))
            if not create or name in ("", ".", ".."):
                raise
        above = self.open_directory(parent or ".", create=True)
        try:
            os.mkdir(name, 0o777, dir_fd=above)
        except FileExistsError:
            pass  # made meanwhile
        finally:
            os.close(above)
        return self.open(path, flags)

    def located(self, directory: int) -> str | None:
        """Where the open ``directory`` really is, relative to the workspace (symlinks on the
        way resolved by the kernel); None when /proc cannot say or it is not beneath."""
        try:
            real = os.readlink(f"/proc/self/fd/{directory}")
        except OSError:
            return None
        root = os.path.realpath(self.root)
        if real == root:
            return "."
        if not self.confine or real.startswith(root + os.sep):
            return os.path.relpath(real, root)
        return None

    def unlink(self, path: str) -> None:
        """Remove the file ``path`` (a symlink itself, never its target)."""
        rel = self.relative(path)
        parent, name = os.path.split(rel)
        if name in ("", ".", ".."):
            raise PathError(f"{path} is not a file")
        directory = self.open(parent or ".", os.O_PATH | os.O_DIRECTORY)
        try:
            os.unlink(name, dir_fd=directory)
        finally:
            os.close(directory)

    def _open_root(self) -> int:
        try:
            return os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise PathError(f"the workspace {self.root} does not exist (was it deleted?)") from None

    def _walk(
        self, root: int, path: str, rel: str, flags: int, mode: int, make_parents: bool
    ) -> int:
        """Open ``rel`` one component at a time, never following a link without checking it.

        ``dirs`` holds a descriptor for each directory we stand in below the root, so ``..``
        goes back the way we came and can never climb above the workspace.
        """
        pending = _parts(rel)[::-1]  # the next component is at the end
        dirs: list[int] = []
        links = 0
        try:
            while pending:
                name = pending.pop()
                here = dirs[-1] if dirs else root
                if name == "..":
                    if not dirs:
                        raise self._outside(path)
                    os.close(dirs.pop())
                    continue
                final = not pending
                try:
                    if final:
                        return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=here)
                    step = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                    dirs.append(os.open(name, step, dir_fd=here))
                    continue
                except FileNotFoundError:
                    if final or not make_parents:
                        raise
                    try:
                        os.mkdir(name, 0o777, dir_fd=here)
                    except FileExistsError:
                        pass  # made meanwhile; look again
                    pending.append(name)
                    continue
                except OSError as exc:
                    # O_NOFOLLOW on a symlink: ELOOP, or ENOTDIR when a directory was wanted.
                    target = (
                        _readlink(name, here) if exc.errno in (errno.ELOOP, errno.ENOTDIR) else None
                    )
                    if target is None:
                        raise
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
                if os.path.isabs(target):
                    full = os.path.normpath(target)
                    if full != self.root and not full.startswith(self.root + os.sep):
                        raise self._outside(path)
                    while dirs:  # start again from the workspace itself
                        os.close(dirs.pop())
                    target = os.path.relpath(full, self.root)
                pending.extend(_parts(target)[::-1])
            here = dirs[-1] if dirs else root
            return os.open(".", flags, mode, dir_fd=here)  # the path named a directory
        finally:
            for fd in dirs:
                os.close(fd)
