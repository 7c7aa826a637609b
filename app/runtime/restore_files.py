"""Write a recorded manifest's files beneath one directory, never following a link.

Every entry is reached from a descriptor of the target directory, one component at a time:
directories are opened with ``O_NOFOLLOW | O_DIRECTORY``, files created with ``O_CREAT |
O_EXCL | O_NOFOLLOW`` and their mode set with ``fchmod`` on that descriptor, links made with
``symlinkat`` relative to a directory descriptor. So a link made by an earlier entry (or by
anyone else meanwhile) is never walked through or written through: the entry is refused.
Modes are 0644 or 0755 only; directories are made 0755 (less the umask).

``workspace_restore`` calls ``write_entries`` in its own process, or, when Chronicle runs as
root, runs this file as a child of the sandbox's unprivileged uid: ``python -I -B -c SOURCE
FD``, the entries as JSON on stdin and FD the target directory the parent opened (so the
child needs no path to it, nor to Chronicle's installation). Standard library only for that.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import sys
from typing import Any

FILE_MODE = 0o644
EXECUTABLE_MODE = 0o755
DIRECTORY_MODE = 0o755
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: What O_NOFOLLOW / O_DIRECTORY answer when a component is a link or not a directory.
NOT_A_DIRECTORY = (errno.ELOOP, errno.ENOTDIR)


class RestoreRefused(Exception):
    """An entry that would leave the target or pass through a link; nothing more is written.
    Python's own base: this file runs alone, as a child of the sandbox's uid, with the
    standard library only (``workspace_restore`` turns it into a ``WorkspaceStateError``)."""


def write_entries(target_fd: int, entries: list[dict[str, Any]]) -> None:
    """Write each entry (``path``, ``type``, ``encoding``, ``content``) beneath ``target_fd``."""
    for entry in entries:
        _write(target_fd, entry)


def _write(target_fd: int, entry: dict[str, Any]) -> None:
    path = str(entry["path"])
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise RestoreRefused(f"{path!r} is not a plain relative path")
    opened: list[int] = []
    try:
        here = target_fd
        for part in parts[:-1]:
            try:
                os.mkdir(part, DIRECTORY_MODE, dir_fd=here)
            except FileExistsError:
                pass
            try:
                here = os.open(part, DIRECTORY, dir_fd=here)
            except OSError as exc:
                if exc.errno in NOT_A_DIRECTORY:
                    raise RestoreRefused(f"{path!r} passes through a link or a file") from None
                raise
            opened.append(here)
        name = parts[-1]
        try:
            if entry["type"] == "symlink":
                os.symlink(str(entry["content"]), name, dir_fd=here)
                return
            _write_file(here, name, entry)
        except FileExistsError:
            raise RestoreRefused(f"{path!r} exists already (named twice?)") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise RestoreRefused(f"{path!r} is a link; not written through") from None
            raise
    finally:
        for fd in opened:
            os.close(fd)


def _write_file(directory: int, name: str, entry: dict[str, Any]) -> None:
    content = str(entry["content"])
    data = base64.b64decode(content) if entry["encoding"] == "base64" else content.encode()
    fd = os.open(name, CREATE, 0o600, dir_fd=directory)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, EXECUTABLE_MODE if entry["type"] == "executable" else FILE_MODE)
    finally:
        os.close(fd)


def main() -> int:
    target_fd = int(sys.argv[1])
    try:
        write_entries(target_fd, json.load(sys.stdin))
    except RestoreRefused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
