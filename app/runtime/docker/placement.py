"""Which engine of the pool a new sandbox goes to: the one with the most free capacity.

Pure logic over what the pool learnt of each host (``HostLoad``), so it is tested as such.

- **capacity** of a host: its entry's ``max_sandboxes``, else ``docker_host_max_sandboxes``,
  else how many sandboxes its memory holds (the engine's total memory, from ``docker info``,
  divided by ``sandbox_memory``, the limit each sandbox gets; at least one). CPUs are not
  counted: a sandbox's CPU limit is a share, and idle sandboxes use none.
- **running**: the Chronicle sandboxes on it now (containers labelled ``chronicle.sandbox``,
  whoever started them: every worker sharing the pool counts the same containers).
- **free** = capacity - running. The host with the most free wins; a tie goes to the one
  listed first in ``docker_hosts``. An unreachable host is never chosen. A session's own
  leftover sandbox does not count against it on the host it is on (a takeover replaces it
  there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class HostLoad:
    """What placement knows of one host right now."""

    host: str
    reachable: bool
    capacity: int = 0
    running: int = 0
    problem: str | None = None

    @property
    def free(self) -> int:
        return max(self.capacity - self.running, 0) if self.reachable else 0


def capacity_of(max_sandboxes: int | None, memory_total: int, sandbox_memory: int) -> int:
    """The sandboxes a host may run (see the module): the set maximum, else its memory's."""
    if max_sandboxes is not None:
        return max_sandboxes
    if sandbox_memory <= 0:
        return max(memory_total // (1 << 30), 1)  # no memory limit: a GiB each
    return max(memory_total // sandbox_memory, 1)


def choose_host(loads: Sequence[HostLoad]) -> HostLoad | None:
    """The host a new sandbox goes to (most free; first listed on a tie), or None when no
    reachable host has room."""
    best: HostLoad | None = None
    for load in loads:
        if load.free > 0 and (best is None or load.free > best.free):
            best = load
    return best


def why_no_host(loads: Sequence[HostLoad]) -> str:
    """Why ``choose_host`` found none, host by host, for the error a user reads."""
    if not loads:
        return "the pool has no Docker hosts"
    parts = []
    for load in loads:
        if not load.reachable:
            parts.append(f"{load.host} is unreachable ({load.problem or 'no answer'})")
        else:
            parts.append(f"{load.host} runs {load.running} of {load.capacity}")
    return "no Docker host has room for another sandbox: " + "; ".join(parts)
