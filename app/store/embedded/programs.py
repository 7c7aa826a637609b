"""Running pgserver's PostgreSQL programs, as the server's own system user when we are root.

PostgreSQL refuses to run as root, so as root the server runs as pgserver's ``pgserver`` user
(created if needed), with its own group and no other: that user must be able to reach the data
directory and run the binaries, nothing more.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import psutil

from app.store.errors import StoreError

SYSTEM_USER = "pgserver"  # pgserver's name for the server's user when running as root


class ServerUser(NamedTuple):
    """The system user the server runs as when Chronicle runs as root."""

    name: str
    uid: int
    gid: int


def _pgserver() -> ModuleType:
    """pgserver's helpers (importing the package makes platformdirs warn without
    XDG_RUNTIME_DIR; nothing of it is used that needs one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver._commands
        import pgserver.utils

    return pgserver


def binaries() -> Path:
    return Path(_pgserver()._commands.POSTGRES_BIN_PATH)


def server_user() -> ServerUser | None:
    """The user the server runs as: None for ourselves, pgserver's user when we are root."""
    if os.geteuid() != 0:
        return None
    entry = _pgserver().utils.ensure_user_exists(SYSTEM_USER)
    assert entry is not None
    return ServerUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def run_program(
    user: ServerUser | None,
    program: str,
    *args: str,
    failure: Callable[[str], str],
    timeout: float = 90,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run a PostgreSQL program as ``user``; on failure raise ``failure(its output)``.
    ``env`` adds to our environment (e.g. ``PGPASSWORD``: never a password in argv, which
    every user of the machine can read).

    Temporary files rather than pipes: pg_ctl's server inherits them and would hold a pipe
    open (the same reason pgserver gives).
    """
    if user is not None:
        _allow_server_to_run_binaries()
    with tempfile.TemporaryFile("w+") as output:
        try:
            subprocess.run(
                [str(binaries() / program), *args],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=timeout,
                user=user.uid if user else None,
                group=user.gid if user else None,
                extra_groups=[] if user else None,
                cwd="/",
                env={**os.environ, **env} if env else None,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            output.seek(0)
            raise StoreError(failure(output.read().strip() or str(exc))) from None


def write_server_file(path: Path, text: str, user: ServerUser | None) -> None:
    """Replace a file the server reads (pg_hba.conf): owned by its user, mode 0600."""
    draft = path.with_name(f".{path.name}.chronicle")
    draft.unlink(missing_ok=True)
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    if user is not None:
        os.chown(draft, user.uid, user.gid)
    draft.replace(path)


def process_gid(pid: int) -> int | None:
    try:
        return int(psutil.Process(pid).gids().real)
    except psutil.Error:
        return None


def allow_traversal(directory: Path, gid: int) -> None:
    """Let other users pass through ``directory`` and its parents (search, not list) so the
    server's user reaches the data dir; pgserver would make them readable too. A directory
    of the server's group that the group may pass already stays as it is (a standby's
    directory inside the primary's data dir, 0710)."""
    for path in (directory, *directory.parents):
        info = path.stat()
        mode = info.st_mode
        if info.st_gid == gid and mode & stat.S_IXGRP:
            continue
        if not mode & stat.S_IXOTH:
            path.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)


def _allow_server_to_run_binaries() -> None:
    """pgserver's own preparation of its binaries for another user (as it does for root)."""
    utils = _pgserver().utils
    read = stat.S_IRGRP | stat.S_IROTH
    execute = stat.S_IXGRP | stat.S_IXOTH
    utils.ensure_prefix_permissions(binaries())
    utils.ensure_folder_permissions(binaries(), execute | read)
    utils.ensure_folder_permissions(binaries().parent / "lib", read)
