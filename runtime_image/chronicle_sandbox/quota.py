"""The workspace size limit: how much a sandbox may add to its workspace.

Without it a command could fill the host's disk (three 200 MB files, then more): Docker's
writable-layer quota does not cover the bind-mounted workspace, and the local jail has none.
The limit counts what the workspace holds on disk (allocated blocks, each hard-linked file
once, links never followed, other file systems mounted inside not entered) beyond what it held
when the sandbox started, so a large project given as the workspace is not over it at once.
(A sandbox restarted after it died measures its start again.)

Three things keep to it: no single file a command writes may be larger (``RLIMIT_FSIZE``, set
by the server on the shell); a watcher measures the workspace five times a second (less often
when one measurement is slow: it takes at most a fifth of the time, unless the file system
loses more space meanwhile than the limit has left) and, when the workspace has grown past
the limit, stops every command of the shell (``Shell.stop_commands``: the
server adopts what detaches itself, so ``setsid`` does not escape); file actions refuse a
write that would pass it. A fast writer can go past by what it writes between two
measurements; a command that frees space meanwhile is left alone. Blocks reserved without
being written (``fallocate``) are refused to the shell's commands by ``disk_filter``; files
they deleted but hold open count, and a process whose open files cannot be seen is stopped.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable

MIB = 1024 * 1024
#: Seconds between measurements, at least; a slow measurement spaces them out further.
INTERVAL = 0.2
#: A measurement may take at most this share of the time.
BUSY_SHARE = 0.2
#: What one entry counts for at least: a file system's inodes run out too, and an empty file,
#: a short link or a directory of them holds no block of its own (half a million ``touch``
#: calls counted 0 bytes). 4 KiB each: a 2 GB limit allows half a million entries.
ENTRY_BYTES = 4096


class WorkspaceFull(Exception):
    """A write would take the workspace past its size limit."""


def disk_usage(root: str, processes: Iterable[int] = (), hidden: set[int] | None = None) -> int:
    """Bytes allocated to everything beneath ``root`` (each entry at least ``ENTRY_BYTES``): no
    link followed, no other file system entered, a hard-linked file counted once; what vanishes
    or cannot be read meanwhile is skipped. Then the files on the same file system that
    ``processes`` hold open after they were deleted (``exec 3>f; rm f``, then write to fd 3:
    no walk sees them, the disk fills all the same); those whose descriptors cannot be read
    are added to ``hidden``."""
    try:
        device = os.lstat(root).st_dev
    except OSError:
        return 0
    seen: set[tuple[int, int]] = set()
    total = 0
    pending = [root]
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_dev != device:
                    continue
                if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                    key = (info.st_dev, info.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                total += max(info.st_blocks * 512, ENTRY_BYTES)
                if stat.S_ISDIR(info.st_mode):
                    pending.append(entry.path)
    return total + deleted_but_open(device, processes, seen, set() if hidden is None else hidden)


def deleted_but_open(
    device: int, processes: Iterable[int], seen: set[tuple[int, int]], hidden: set[int]
) -> int:
    """Bytes allocated to regular files on ``device`` that no directory names any more and
    one of ``processes`` holds open (each once). A process whose descriptors cannot be read
    (it made itself non-dumpable: ``prctl``, or it runs a program it may not read) goes into
    ``hidden``: what it holds is not known."""
    total = 0
    for pid in processes:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except PermissionError:
            if not _ended(pid):
                hidden.add(pid)
            continue
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                info = os.stat(f"/proc/{pid}/fd/{descriptor}")
            except OSError:
                continue
            if info.st_nlink or info.st_dev != device or not stat.S_ISREG(info.st_mode):
                continue
            key = (info.st_dev, info.st_ino)
            if key not in seen:
                seen.add(key)
                total += info.st_blocks * 512
    return total


def _ended(pid: int) -> bool:
    """Whether ``pid`` is gone or a zombie (killed, not yet collected: it holds nothing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat_line = handle.read()
    except OSError:
        return True
    return stat_line[stat_line.rfind(b")") + 2 :][:1] in (b"Z", b"X")


class WorkspaceQuota:
    """The limit of one workspace: ``limit_bytes`` on top of what it held at the start."""

    def __init__(
        self,
        workspace: str,
        limit_bytes: int,
        processes: Callable[[], Iterable[int]] = lambda: (),
    ) -> None:
        """``processes``: the sandbox's processes, whose deleted but open files count too."""
        self.workspace = workspace
        self.limit_bytes = limit_bytes
        self.processes = processes
        self.baseline = disk_usage(workspace, processes())
        self.used = self.baseline
        #: The sandbox's processes whose open files the last measurement could not see.
        self.hidden: set[int] = set()
        self._stop = threading.Event()

    @property
    def allowed(self) -> int:
        return self.baseline + self.limit_bytes

    @property
    def reached(self) -> str:
        """What an observation says when the limit stopped something."""
        return f"workspace size limit ({self.limit_bytes // MIB} MB) reached"

    @property
    def hiding(self) -> str:
        """What an observation says when a process that hid its open files was stopped."""
        return (
            f"workspace size limit ({self.limit_bytes // MIB} MB): a process whose open files "
            "it cannot see (a non-dumpable one) was stopped"
        )

    def measure(self) -> int:
        hidden: set[int] = set()
        self.used = disk_usage(self.workspace, self.processes(), hidden)
        self.hidden = hidden
        return self.used

    def check_write(self, path: str, adding: int) -> None:
        """Refuse a write of ``adding`` more bytes to ``path`` that would pass the limit."""
        used = self.measure()
        if used + adding > self.allowed:
            raise WorkspaceFull(
                f"{self.reached}: writing {path} would add {adding:,} bytes to a workspace "
                f"{max(used - self.baseline, 0) // MIB} MB over its start; nothing was written. "
                "Delete what is not needed, then try again"
            )

    def watch(
        self,
        stop_commands: Callable[[str], bool],
        each_round: Callable[[], None] = lambda: None,
        stop_processes: Callable[[set[int], str], None] = lambda pids, note: None,
    ) -> threading.Thread:
        """Measure in a thread until ``close``; while the workspace grows past the limit,
        ``stop_commands(note)`` (True when it stopped something). A command that frees space
        while the workspace is over (``rm``) is left alone: only growth stops commands.
        A process whose open files cannot be seen (``hidden``) could hold any amount of
        deleted files: ``stop_processes(pids, note)`` stops it when a second measurement in a
        row cannot see them either (for a moment inside ``execve`` an ordinary process's are
        unreadable too: a full parallel run once stopped an ``echo`` so). ``each_round`` runs
        after every measurement (the shell reaps what it adopted)."""

        def loop() -> None:
            last = self.used
            suspects: set[int] = set()
            while not self._stop.is_set():
                began = time.monotonic()
                free = self._free()
                used = self.measure()
                hiding = self.hidden & suspects
                suspects = self.hidden
                if hiding:
                    stop_processes(hiding, f"[{self.hiding}]")
                if used > self.allowed and used > last:
                    stop_commands(f"[{self.reached}: the command was stopped]")
                last = used
                each_round()
                took = time.monotonic() - began
                self._pause(max(INTERVAL, took / BUSY_SHARE), free, self.allowed - used)

        thread = threading.Thread(target=loop, name="workspace-quota", daemon=True)
        thread.start()
        return thread

    def _free(self) -> int | None:
        """Bytes free on the workspace's file system (one cheap call), None if unknown."""
        try:
            info = os.statvfs(self.workspace)
        except OSError:
            return None
        return info.f_bfree * info.f_frsize

    def _pause(self, seconds: float, free: int | None, room: int) -> None:
        """Wait ``seconds`` before the next measurement, or less: a workspace of many entries
        is slow to measure (3 s for 400,000 here), and spacing measurements out gave a fast
        writer ``seconds`` to go past (2.7 GB past a 64 MB limit). Checking every
        ``INTERVAL`` how much the file system has lost since the last measurement began
        (``free`` then), anyone's writes included, costs one call: once it lost more than
        the ``room`` the limit had left, the next measurement starts at once."""
        deadline = time.monotonic() + seconds
        while not self._stop.wait(min(INTERVAL, max(deadline - time.monotonic(), 0.0))):
            if time.monotonic() >= deadline:
                return
            now = self._free()
            if free is not None and now is not None and free - now > max(room, 0):
                return

    def close(self) -> None:
        self._stop.set()
