"""A pool of Docker engines as a provisioner (``app.runtime.provisioner``): the first one, so
that a Kubernetes provisioner is a module like this one.

Each sandbox is the Docker runtime's hardened container (``DockerRuntime``), started on the
engine ``placement`` chooses and labelled ``chronicle.host`` with it, besides the session's
labels. A session's sandbox is found on whichever host by its ``chronicle.session`` label:
a takeover replaces its leftover in place, and a restart stays on the session's host (gone:
``HostLostError``, and the session is interrupted until a resume places it anew).

The container's action server listens on a Unix socket in a host directory, and the
workspace is a bind mount, as on one engine: the pool's engines must see this machine's
paths (engines on this machine, or hosts that mount the same workspaces and socket
directories). docs/sandboxes.md says how to point at remote engines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

import docker
import docker.errors
import requests
from docker.utils import parse_bytes

from app.runtime.docker.config import DockerConfig
from app.runtime.docker.hosts import DockerHost, connect
from app.runtime.docker.placement import HostLoad, capacity_of, choose_host, why_no_host
from app.runtime.docker.reaper import list_sandboxes as engine_sandboxes
from app.runtime.docker.reaper import remove_sandbox
from app.runtime.docker.runtime import LABEL, DockerRuntime, container_name
from app.runtime.errors import SandboxStartError
from app.runtime.provisioner import (
    HostHealth,
    HostLostError,
    NoCapacityError,
    Sandbox,
    SandboxListing,
)

log = logging.getLogger(__name__)

#: The label that names the engine a sandbox runs on (its ``docker_hosts`` entry).
HOST_LABEL = "chronicle.host"
#: What an engine that cannot be reached raises through the SDK.
ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
#: Container states that hold a host's capacity.
HOLDING = ("created", "running", "restarting", "paused")


class DockerHostPool:
    """The Docker engines of ``docker_hosts`` behind the provisioner interface."""

    kind = "docker"

    def __init__(
        self,
        config: DockerConfig,
        hosts: Sequence[DockerHost] | None = None,
        *,
        socket_root: Path | None = None,
    ) -> None:
        self.config = config
        self.hosts = tuple(hosts if hosts is not None else config.pool_hosts())
        if not self.hosts:
            raise SandboxStartError("a Docker host pool needs at least one engine (docker_hosts)")
        self._by_url = {host.url: host for host in self.hosts}
        self._socket_root = socket_root
        self._engines: dict[str, docker.DockerClient] = {}
        self._memory: dict[str, int] = {}
        #: the sandboxes this pool started and has not released, by (host, name)
        self._live: dict[tuple[str, str], DockerRuntime] = {}
        self._sandbox_memory = parse_bytes(config.memory) if config.memory else 0
        #: one placement at a time in this pool: a survey, then the container it decided on
        self._placing = asyncio.Lock()

    # -- engines ----------------------------------------------------------------------------

    def _engine(self, url: str) -> docker.DockerClient:
        engine = self._engines.get(url)
        if engine is None:
            engine = self._engines[url] = connect(self._by_url[url], self.config.tls)
        return engine

    def _survey(self, host: DockerHost) -> tuple[HostLoad, set[str]]:
        """One host's load and the sessions with a sandbox on it (blocking)."""
        try:
            engine = self._engine(host.url)
            engine.ping()
            if host.url not in self._memory:
                self._memory[host.url] = int(engine.info().get("MemTotal") or 0)
            found = engine.containers.list(all=True, filters={"label": f"{LABEL}=1"})
        except ENGINE_ERRORS as exc:
            return HostLoad(host.url, reachable=False, problem=_short(exc)), set()
        capacity = capacity_of(
            host.max_sandboxes or self.config.host_max_sandboxes,
            self._memory[host.url],
            self._sandbox_memory,
        )
        running = sum(1 for container in found if container.status in HOLDING)
        sessions = {container.labels.get("chronicle.session", "") for container in found}
        return HostLoad(host.url, True, capacity, running), sessions

    async def _surveys(self) -> list[tuple[HostLoad, set[str]]]:
        return list(await asyncio.gather(*(asyncio.to_thread(self._survey, h) for h in self.hosts)))

    # -- the provisioner interface ------------------------------------------------------------

    async def health(self) -> list[HostHealth]:
        return [
            HostHealth(
                host=load.host,
                reachable=load.reachable,
                capacity=load.capacity,
                running=load.running,
                problem=load.problem,
            )
            for load, _ in await self._surveys()
        ]

    async def acquire(
        self, session_id: str, workspace: Path, *, host: str | None = None
    ) -> Sandbox:
        """See ``Provisioner.acquire``. Placements through one pool are made one at a time,
        so that each survey counts the sandboxes placed before it (sandboxes placed at the
        same instant by two workers may still pick the same host: a host's maximum is the
        capacity placement aims at, not a lock)."""
        async with self._placing:
            return await self._place(session_id, workspace, host)

    async def _place(self, session_id: str, workspace: Path, host: str | None) -> Sandbox:
        surveys = await self._surveys()
        loads = [load for load, _ in surveys]
        holding = [load for load, sessions in surveys if load.reachable and session_id in sessions]
        if host is not None:
            chosen = next((load for load in loads if load.host == host), None)
            if chosen is None:
                raise HostLostError(host, "no longer in docker_hosts")
            if not chosen.reachable:
                raise HostLostError(host, chosen.problem or "no answer")
        elif holding:
            chosen = holding[0]  # a takeover: the session's leftover is replaced where it is
        else:
            found = choose_host(loads)
            if found is None:
                raise NoCapacityError(why_no_host(loads))
            chosen = found
        for other in holding:
            if other.host != chosen.host:  # a copy left on another host goes now
                await asyncio.to_thread(self._remove, other.host, container_name(session_id))
        runtime = DockerRuntime(
            workspace,
            session_id,
            config=self.config,
            client=await asyncio.to_thread(self._engine, chosen.host),
            socket_root=self._socket_root,
            labels={HOST_LABEL: chosen.host},
            files=self.config.files_for(self._by_url[chosen.host], chosen.host),
        )
        # Shielded: a start cancelled half-way (a warm pool closing while it fills) would
        # leave the container its thread is creating behind; it finishes, then goes.
        starting = asyncio.ensure_future(runtime.start())
        try:
            await asyncio.shield(starting)
        except BaseException:
            with contextlib.suppress(BaseException):
                await starting
            with contextlib.suppress(*ENGINE_ERRORS):
                await runtime.close()
            raise
        assert runtime.client is not None
        self._live[(chosen.host, runtime.sandbox_id)] = runtime
        log.info("sandbox %s placed on %s (%d free)", runtime.sandbox_id, chosen.host, chosen.free)
        return Sandbox(chosen.host, runtime.sandbox_id, runtime.client, runtime.image_id)

    async def wait_ready(self, sandbox: Sandbox, timeout: float) -> None:
        runtime = self._live.get((sandbox.host, sandbox.sandbox_id))
        if runtime is None:
            raise SandboxStartError(f"{sandbox.sandbox_id} on {sandbox.host} was released")
        try:
            await runtime.wait_ready(timeout)
        except ENGINE_ERRORS as exc:
            raise HostLostError(sandbox.host, _short(exc)) from None

    async def release(self, host: str, sandbox_id: str) -> None:
        runtime = self._live.pop((host, sandbox_id), None)
        if runtime is not None:
            try:
                await runtime.close()
            except ENGINE_ERRORS as exc:  # a host that is gone has nothing left to remove
                log.warning("could not remove %s from %s: %s", sandbox_id, host, _short(exc))
            return
        if host in self._by_url:
            await asyncio.to_thread(self._remove, host, sandbox_id)

    def _remove(self, host: str, name: str) -> None:
        """Remove a sandbox this pool did not start (the reaper's, a takeover's leftover)."""
        try:
            engine = self._engine(host)
            remove_sandbox(engine, engine.containers.get(name))
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if exc.status_code == 409:  # someone else is removing it right now
                return
            log.warning("could not remove %s from %s: %s", name, host, _short(exc))
            return
        except ENGINE_ERRORS as exc:
            log.warning("could not remove %s from %s: %s", name, host, _short(exc))

    async def list_sandboxes(self) -> list[SandboxListing]:
        found: list[SandboxListing] = []
        for host in self.hosts:
            try:
                engine = await asyncio.to_thread(self._engine, host.url)
                sandboxes = await engine_sandboxes(engine)
            except ENGINE_ERRORS as exc:
                log.info("cannot list the sandboxes of %s: %s", host.url, _short(exc))
                continue
            found.extend(
                SandboxListing(
                    host=host.url,
                    sandbox_id=info.name,
                    session_id=info.session_id,
                    status=info.status,
                    created=info.created,
                    idle_seconds=info.idle_seconds,
                )
                for info in sandboxes
            )
        return found


def _short(exc: BaseException) -> str:
    """An engine error in one line (the SDK's carry whole stacks of causes)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]
