"""Replace a file's contents all at once, or not at all.

The new bytes go to a temporary file in the target's own directory, are flushed to disk, and
the temporary file is renamed over the target: a reader sees the old file or the new one,
and a write that fails (a full disk, a size limit) leaves the old file as it was. The
directory is opened beneath the workspace (``paths.Workspace``) and everything after that
is relative to its descriptor, so a path swapped mid-write cannot lead the write elsewhere;
``rename`` never follows a link in place of the target.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

from .paths import MAX_LINKS, PathError, Workspace

#: Never wait on a FIFO; refuse to follow a link where a plain file is expected.
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
#: Link errors that mean "this file system has no hard links", not "the name is taken".
NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV)


class NotRegularFile(OSError):
    """The target is there but is no regular file (a directory, a FIFO, a device)."""


def replace_file(paths: Workspace, path: str, data: bytes, *, exclusive: bool = False) -> None:
    """Make ``path`` hold exactly ``data``; ``exclusive`` fails if it exists already.

    Parents are created. A symlink at ``path`` that stays inside the workspace is followed
    (its target is replaced, the link kept); an existing file keeps its permission bits.
    Raises ``PathError`` for paths leading out, ``OSError`` (``FileExistsError``,
    ``IsADirectoryError``, ``PermissionError``, ENOSPC...) as ``os`` would.
    """
    directory, name = _target(paths, path, follow=not exclusive)
    try:
        existing = _existing(directory, name, exclusive)
        temporary, fd = _temporary(directory, existing)
        try:
            try:
                _write_all(fd, data)
                if existing is not None:
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode) & 0o777)
                    with contextlib.suppress(OSError):  # only root or the owner may; best effort
                        os.fchown(fd, existing.st_uid, existing.st_gid)
                os.fsync(fd)
            finally:
                os.close(fd)
            if exclusive:
                _link_new(directory, temporary, name)
            else:
                os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            raise
        _sync_directory(directory)
    finally:
        os.close(directory)


def _target(paths: Workspace, path: str, *, follow: bool) -> tuple[int, str]:
    """The directory (a descriptor, created if missing) and name the bytes go to: ``path``,
    or (``follow``) where the symlinks at its end lead, while they stay inside the workspace."""
    rel = paths.relative(path)
    for _ in range(MAX_LINKS):
        parent, name = os.path.split(rel)
        if name in ("", ".", ".."):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        directory = paths.open_directory(parent or ".", create=True)
        if not follow:
            return directory, name
        try:
            target = os.readlink(name, dir_fd=directory)
        except OSError:  # no link (EINVAL) or nothing there yet (ENOENT): this is the place
            return directory, name
        where = paths.located(directory)
        os.close(directory)
        if where is None:  # /proc cannot say where the directory is: go by the names
            where = parent or "."
        rel = paths.relative(os.path.join(paths.shown(where), target))
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)


def _existing(directory: int, name: str, exclusive: bool) -> os.stat_result | None:
    """What is at ``name`` now (None: nothing), checked the way writing it in place would be:
    a regular file that this user may write."""
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if exclusive:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), name)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(errno.ENXIO, "not a regular file", name)
    # The permission check of an in-place write (the directory alone would allow a rename).
    os.close(os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory))
    return info


def _temporary(directory: int, existing: os.stat_result | None) -> tuple[str, int]:
    """A new hidden file next to the target, no more readable than the target is."""
    mode = stat.S_IMODE(existing.st_mode) & 0o666 if existing is not None else 0o666
    while True:
        name = f".chronicle-{secrets.token_hex(8)}.tmp"
        try:
            return name, os.open(name, CREATE, mode, dir_fd=directory)
        except FileExistsError:
            continue


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _link_new(directory: int, temporary: str, name: str) -> None:
    """Give ``temporary`` the name ``name`` only if that name is free (never replacing)."""
    try:
        os.link(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError as exc:
        if exc.errno not in NO_LINKS:
            raise
        # No hard links here: claim the name with an empty file, then replace that.
        os.close(os.open(name, CREATE, 0o600, dir_fd=directory))
        os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        return
    with contextlib.suppress(OSError):  # the file is in place; a leftover name is harmless
        os.unlink(temporary, dir_fd=directory)


def _sync_directory(directory: int) -> None:
    """Flush the rename itself to disk (best effort: some file systems refuse)."""
    try:
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=directory)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["NotRegularFile", "PathError", "replace_file"]
