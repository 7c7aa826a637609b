"""A cgroup per local sandbox: it bounds the sandbox's processes and memory, and finds every
one of its processes again when the sandbox is closed.

Made where this process may make one: cgroup v2 when ``/sys/fs/cgroup`` is a writable cgroup2
mount (the ``pids`` and ``memory`` controllers enabled below our own cgroup), else the cgroup
v1 ``pids`` and ``memory`` hierarchies. In practice that means root, or a delegated cgroup v2
subtree. The sandbox's first process moves itself in (``enter``, before it execs bubblewrap),
so everything it ever forks is inside, and the cgroup sits below our own cgroup, so it stays
within whatever bounds us.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from app.runtime.local.limits import SandboxLimits

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("pids", "memory")
PREFIX = "chronicle-sandbox-"
#: An empty sandbox cgroup older than this was left by a process that died without closing.
STALE_AFTER = 60.0


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, options) of every mount this process sees."""
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mounts") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) >= 4:
                found.append((fields[1], fields[2], set(fields[3].split(","))))
    return found


def _own_cgroups() -> dict[str, str]:
    """Our cgroup path per v1 controller, and under ``""`` our cgroup v2 path."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for controller in parts[1].split(",") if parts[1] else [""]:
                    paths[controller] = parts[2]
    return paths


def _parents() -> tuple[Path | None, dict[str, Path]]:
    """Where sandbox cgroups go: below our own cgroup, in cgroup v2 when /sys/fs/cgroup is a
    writable cgroup2 mount, else in each cgroup v1 hierarchy of ``CONTROLLERS``."""
    mounts = _mounts()
    own = _own_cgroups()
    v2_root = any(
        point == str(CGROUP_ROOT) and kind == "cgroup2" and "rw" in options
        for point, kind, options in mounts
    )
    if v2_root and "" in own:
        return CGROUP_ROOT / own[""].lstrip("/"), {}
    parents = {}
    for controller in CONTROLLERS:
        point = next(
            (p for p, kind, opts in mounts if kind == "cgroup" and controller in opts), None
        )
        if point is not None and controller in own:
            parents[controller] = Path(point) / own[controller].lstrip("/")
    return None, parents


def _remove_stale(parent: Path) -> None:
    """Remove the empty sandbox cgroups in ``parent`` older than ``STALE_AFTER`` (a live
    sandbox's cgroup always holds its processes; a young empty one may be being set up)."""
    try:
        children = [child for child in parent.iterdir() if child.name.startswith(PREFIX)]
    except OSError:
        return
    for child in children:
        with contextlib.suppress(OSError):  # busy (not empty), or gone meanwhile
            if time.time() - child.stat().st_mtime > STALE_AFTER:
                child.rmdir()


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _limit(value: int | None) -> str:
    return "max" if value is None else str(value)


@dataclass(frozen=True)
class SandboxCgroup:
    """The directories of one sandbox's cgroup (one for v2; one per controller for v1)."""

    directories: tuple[Path, ...]
    version: int
    bounds_processes: bool
    bounds_memory: bool

    @classmethod
    def create(cls, name: str, limits: SandboxLimits) -> SandboxCgroup | None:
        """A fresh cgroup ``chronicle-sandbox-<name>`` with ``limits``, or None where none
        can be made. Empty ones that crashed owners left behind are removed on the way."""
        v2_parent, v1_parents = _parents()
        for parent in [v2_parent, *v1_parents.values()]:
            if parent is not None:
                _remove_stale(parent)
        if v2_parent is not None:
            return cls._create_v2(name, limits, v2_parent)
        return cls._create_v1(name, limits, v1_parents)

    @classmethod
    def _create_v2(cls, name: str, limits: SandboxLimits, parent: Path) -> SandboxCgroup | None:
        try:
            available = set((parent / "cgroup.controllers").read_text().split())
            enabled = set((parent / "cgroup.subtree_control").read_text().split())
        except OSError as exc:
            log.debug("no cgroup v2 below %s: %s", parent, exc)
            return None
        for controller in CONTROLLERS:
            if controller in available and controller not in enabled:
                try:  # refused (EBUSY) when our own cgroup holds processes and is not the root
                    _write(parent / "cgroup.subtree_control", f"+{controller}")
                    enabled.add(controller)
                except OSError as exc:
                    log.debug("cannot enable the %s controller in %s: %s", controller, parent, exc)
        directory = parent / f"{PREFIX}{name}"
        try:
            directory.mkdir(mode=0o755)
        except OSError as exc:
            log.debug("cannot make the cgroup %s: %s", directory, exc)
            return None
        pids = memory = False
        try:
            if "pids" in enabled:
                _write(directory / "pids.max", _limit(limits.processes))
                pids = limits.processes is not None
            if "memory" in enabled:
                _write(directory / "memory.max", _limit(limits.memory_bytes))
                with contextlib.suppress(OSError):  # no swap: the limit must hold
                    _write(directory / "memory.swap.max", "0")
                memory = limits.memory_bytes is not None
        except OSError as exc:
            log.warning("could not set the limits of the cgroup %s: %s", directory, exc)
            with contextlib.suppress(OSError):
                directory.rmdir()
            return None
        return cls((directory,), 2, pids, memory)

    @classmethod
    def _create_v1(
        cls, name: str, limits: SandboxLimits, parents: dict[str, Path]
    ) -> SandboxCgroup | None:
        made: list[Path] = []
        bounded: set[str] = set()
        for controller, parent in parents.items():
            directory = parent / f"{PREFIX}{name}"
            try:
                directory.mkdir(mode=0o755)
            except OSError as exc:
                log.debug("cannot make the cgroup %s: %s", directory, exc)
                continue
            made.append(directory)
            try:
                if controller == "pids":
                    _write(directory / "pids.max", _limit(limits.processes))
                    if limits.processes is not None:
                        bounded.add(controller)
                elif limits.memory_bytes is not None:
                    _write(directory / "memory.limit_in_bytes", str(limits.memory_bytes))
                    with contextlib.suppress(OSError):  # memory + swap: no swap beyond it
                        _write(directory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
                    bounded.add(controller)
            except OSError as exc:
                log.warning("could not set the limits of the cgroup %s: %s", directory, exc)
        if not made:
            return None
        return cls(tuple(made), 1, "pids" in bounded, "memory" in bounded)

    # -- use --------------------------------------------------------------------------------

    def procs_files(self) -> list[bytes]:
        return [os.fsencode(directory / "cgroup.procs") for directory in self.directories]

    def pids(self) -> set[int]:
        """Every process in the cgroup now."""
        found: set[int] = set()
        for directory in self.directories:
            with contextlib.suppress(OSError):
                found.update(int(pid) for pid in (directory / "cgroup.procs").read_text().split())
        return found

    def destroy(self, timeout: float = 10.0) -> None:
        """Kill every process in the cgroup and remove it (blocking: run it in a thread)."""
        deadline = time.monotonic() + timeout
        kill_file = self.directories[0] / "cgroup.kill"
        while True:
            if self.version == 2 and kill_file.exists():
                with contextlib.suppress(OSError):
                    _write(kill_file, "1")
            else:
                for pid in self.pids():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            left = []
            for directory in self.directories:
                try:
                    directory.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(directory)
            if not left:
                return
            if time.monotonic() > deadline:
                log.warning("could not remove the sandbox cgroup %s: processes remain", left)
                return
            time.sleep(0.02)


def enter_cgroup(procs_files: list[bytes]) -> None:
    """In a child before exec: move this process into the cgroup (async-signal-safe calls only)."""
    pid = str(os.getpid()).encode()
    for path in procs_files:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, pid)
        finally:
            os.close(fd)
