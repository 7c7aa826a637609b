"""The provisioner interface: what places sandboxes somewhere other than this process's own
engine, so that the ``remote`` runtime (``app.runtime.remote.ProvisionedRuntime``) can run a
session on it.

A provisioner hands out sandboxes (action servers reachable by a ``SandboxClient``), each
labelled with its session, on one of its hosts: a Docker engine of a pool
(``app.runtime.docker.host_pool``), a Kubernetes node (a claim of the agent-sandbox project,
docs/scale-out.md). It places, it does not schedule: whatever it runs on decides the rest.

- ``acquire(session_id, workspace, host=None)`` launches the session's sandbox and returns it
  (not yet ready). It replaces a sandbox the session left behind (a takeover after a crash
  finds it by its label, on whichever host). ``host`` pins it there (a restart stays where
  the session runs): ``HostLostError`` when that host is gone. ``NoCapacityError`` when no
  host has room: a transient refusal, tried again later.
- ``wait_ready(sandbox, timeout)``: until its server answers (``SandboxStartError`` after
  ``timeout``); the session runner records ``runtime.starting`` / ``runtime.ready`` around it.
- ``release(host, sandbox_id)``: remove it (one this provisioner did not start, too: the
  reaper's); a host that is gone has nothing left to remove.
- ``list_sandboxes()``: every sandbox of ours on every reachable host, with its idle time:
  what the reaper (``reap``) reads.
- ``health()``: each host, reachable or not, with its capacity and what it runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from app.runtime.client import SandboxClient
from app.runtime.errors import SandboxError, SandboxStartError

log = logging.getLogger(__name__)


class NoCapacityError(SandboxStartError):
    """No host of the provisioner has room for another sandbox now (try again later)."""


class HostLostError(SandboxStartError):
    """The host a session's sandbox ran on does not answer: the session is interrupted, and
    a resume starts it on another host."""

    def __init__(self, host: str, problem: str) -> None:
        super().__init__(f"the sandbox host {host} is unreachable ({problem})")
        self.host = host


@dataclass
class Sandbox:
    """A sandbox a provisioner launched: where it runs, its name there, and its server."""

    host: str
    sandbox_id: str
    client: SandboxClient
    image_id: str | None = None


class SandboxListing(BaseModel):
    """One sandbox of ours as ``list_sandboxes()`` finds it (the reaper's input)."""

    host: str
    sandbox_id: str
    session_id: str
    status: str
    created: datetime
    idle_seconds: float | None


class HostHealth(BaseModel):
    """One host as ``health()`` finds it."""

    host: str
    reachable: bool
    capacity: int = 0
    running: int = 0
    problem: str | None = None


@runtime_checkable
class Provisioner(Protocol):
    """See the module: the methods a provisioner of sandboxes implements."""

    #: The sandbox kind it provides (``runtime.ready`` names it; "docker" for the Docker pool).
    kind: str

    async def acquire(
        self, session_id: str, workspace: Path, *, host: str | None = None
    ) -> Sandbox: ...

    async def wait_ready(self, sandbox: Sandbox, timeout: float) -> None: ...

    async def release(self, host: str, sandbox_id: str) -> None: ...

    async def list_sandboxes(self) -> list[SandboxListing]: ...

    async def health(self) -> list[HostHealth]: ...


async def reap(
    provisioner: Provisioner, older_than: float, *, sessions: Collection[str] | None = None
) -> list[SandboxListing]:
    """Release the provisioner's sandboxes idle (or, not answering, alive) for longer than
    ``older_than`` seconds, on every host; ``sessions`` limits it to theirs."""
    removed = []
    now = datetime.now(UTC)
    for found in await provisioner.list_sandboxes():
        if sessions is not None and found.session_id not in sessions:
            continue
        age = (now - found.created).total_seconds()
        quiet = found.idle_seconds if found.idle_seconds is not None else age
        if quiet <= older_than:
            continue
        try:
            await provisioner.release(found.host, found.sandbox_id)
        except SandboxError as exc:
            log.warning("could not reap %s on %s: %s", found.sandbox_id, found.host, exc)
            continue
        log.info("reaped sandbox %s on %s (quiet for %.0f s)", found.sandbox_id, found.host, quiet)
        removed.append(found)
    return removed


async def reap_forever(
    provisioner: Provisioner,
    older_than: float,
    every: float,
    *,
    sessions: Collection[str] | None = None,
) -> None:
    """A worker's periodic reaper over every host; a host that is away only delays its part."""
    while True:
        try:
            await reap(provisioner, older_than, sessions=sessions)
        except SandboxError as exc:
            log.warning("sandbox reaper: %s", exc)
        await asyncio.sleep(every)
