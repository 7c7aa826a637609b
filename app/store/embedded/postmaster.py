"""What ``postmaster.pid`` says about a running PostgreSQL, read without trusting a stale file."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import psutil


class Postmaster(NamedTuple):
    """A live server: its pid, where its socket is, and whether it accepts connections."""

    pid: int
    port: int
    socket_dir: Path | None
    #: The first TCP address it listens on; empty when it listens on none.
    listen: str
    status: str

    @property
    def ready(self) -> bool:
        return self.status == "ready"


def read_postmaster(pgdata: Path) -> Postmaster | None:
    """The server running on ``pgdata``, or None when none is (no file, or a dead pid).

    A pid file left by a killed server may name a pid that now belongs to another process,
    so the process must also be a ``postgres`` started on this directory for the file to count.
    """
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError:
        return None
    if len(lines) < 4 or not lines[0].strip().isdigit():
        return None  # being written; the caller waits and reads again
    pid = int(lines[0])
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or "postgres" not in process.name():
            return None
        if str(pgdata) not in process.cmdline():
            return None  # another server's process that took a dead server's pid
    except psutil.Error:
        return None
    field = [line.strip() for line in lines] + [""] * 8
    return Postmaster(
        pid=pid,
        port=int(field[3] or 5432),
        socket_dir=Path(field[4]) if field[4] else None,
        listen=field[5],
        status=field[7],
    )
