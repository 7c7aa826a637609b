"""Files and directories only their owner may read: secrets and the places that hold them."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

log = logging.getLogger(__name__)

SECRET_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def private_dir(path: Path, mode: int = PRIVATE_DIR_MODE) -> Path:
    """``path`` as a directory (created if needed) with exactly ``mode``; never a symlink."""
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    if path.is_symlink() or not path.is_dir():
        raise OSError(f"{path} must be a directory of its own, not a link")
    if stat.S_IMODE(path.stat().st_mode) != mode:
        path.chmod(mode)
    return path


def write_secret(path: Path, text: str | bytes) -> None:
    """Create ``path`` with mode 0600 holding ``text``, whole or not at all.

    Raises ``FileExistsError`` if it exists: a concurrent writer never sees a half-written
    file, and an existing secret is never replaced.
    """
    data = text.encode() if isinstance(text, str) else text
    draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, SECRET_MODE)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.link(draft, path)
    finally:
        draft.unlink(missing_ok=True)


def read_secret(path: Path) -> str:
    """The secret in ``path``; a file others could read is tightened to 0600 first."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, encoding="utf-8") as file:
        mode = stat.S_IMODE(os.fstat(file.fileno()).st_mode)
        if mode & 0o077:
            log.warning("%s was readable by others (mode %o); made it 0600", path, mode)
            os.fchmod(file.fileno(), SECRET_MODE)
        return file.read().strip()


def secret_in(path: Path) -> str:
    """The password kept in ``path``, generated (and stored 0600) on first use."""
    try:
        return read_secret(path)
    except FileNotFoundError:
        pass
    try:
        write_secret(path, secrets.token_urlsafe(32) + "\n")
    except FileExistsError:  # another process made it first
        pass
    return read_secret(path)
