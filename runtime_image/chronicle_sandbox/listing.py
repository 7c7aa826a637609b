"""The directory listing of the editor's ``view``: two levels deep, hidden entries left out.

Names are bytes on Linux; bytes that are not UTF-8 are shown as ``\\xNN`` (with a note
saying so), so the listing is always valid text.
"""

from __future__ import annotations

import os

from .text import has_escapes, printable

#: Never wait on a FIFO; a directory is opened without following a symlink to it.
OPEN_DIRECTORY = os.O_RDONLY | os.O_NONBLOCK | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
ESCAPED_NAMES_NOTE = (
    "[\\xNN in a name above stands for a byte that is not UTF-8; work with such files in the "
    "shell, e.g. ls -b]"
)


def listing(fd: int, root: str) -> str:
    """Files and directories below the directory ``fd`` (shown as ``root``), two levels deep."""
    entries = _entries_below(fd, root)
    if any(has_escapes(entry) for entry in entries):
        entries.append(ESCAPED_NAMES_NOTE)
    return "\n".join(printable(entry) for entry in entries)


def _entries(fd: int) -> list[tuple[str, bool]]:
    """(name, is a directory) of the visible entries of the directory ``fd``, sorted.

    Symlinks are listed as they are, not followed (their target may be anywhere).
    """
    with os.scandir(fd) as scan:
        found = [
            (entry.name, entry.is_dir(follow_symlinks=False))
            for entry in scan
            if not entry.name.startswith(".")
        ]
    return sorted(found)


def _entries_below(fd: int, root: str) -> list[str]:
    entries = [root]
    for name, is_dir in _entries(fd):
        full = os.path.join(root, name)
        entries.append(full + ("/" if is_dir else ""))
        if not is_dir:
            continue
        try:
            child = os.open(name, OPEN_DIRECTORY, dir_fd=fd)
        except OSError:
            continue
        try:
            inner = _entries(child)
        except OSError:
            continue
        finally:
            os.close(child)
        entries.extend(os.path.join(full, n) + ("/" if d else "") for n, d in inner)
    return entries
