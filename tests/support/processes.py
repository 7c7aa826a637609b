"""Finding and killing this machine's processes by an argument of their command line, as a
crash, an operator or the OOM killer would end them."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def pids_with_argument(argument: str) -> list[int]:
    """Processes (other than this one) with ``argument`` as one of their command-line words."""
    wanted = argument.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:  # it ended meanwhile, or is not ours to read
            continue
        if wanted in words:
            found.append(int(entry))
    return found


def kill_with_argument(argument: str) -> list[int]:
    """SIGKILL every process with ``argument`` on its command line; the pids killed."""
    pids = pids_with_argument(argument)
    assert pids, f"no process has {argument!r} on its command line"
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids
