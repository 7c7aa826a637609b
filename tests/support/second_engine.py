"""More Docker engines on this machine, for the host pool's tests: its own socket, data
root, exec root and pidfile, no bridge and no iptables (sandboxes run with no network), and
the sandbox image loaded from the first engine (no registry is reachable).

``kill`` is the host dying: the engine, its containerd, the containers' shims and the
containers themselves, all at once (SIGKILL); ``start`` brings it back on the same data root.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import docker

from app.runtime.image import ensure_image
from tests.support.tls_certs import TlsFiles, make_tls_files

#: Seconds the engine may take to answer after it is started.
START_TIMEOUT = 30.0


class EngineGaveUp(RuntimeError):
    """The engine exited because its containerd did not start in time."""


@dataclass
class SecondEngine:
    """A dockerd of the tests' own; ``url`` is its ``docker_hosts`` entry."""

    root: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    #: also served over TCP with mutual TLS on this port (``tls_url``), certificates in
    #: ``tls`` (None: the Unix socket only)
    tls: TlsFiles | None = None
    tls_port: int = 0
    #: a directory this engine does not see: it runs in a mount namespace of its own with an
    #: empty tmpfs there, as an engine on another machine would see that path (None: all)
    hidden: Path | None = None

    @property
    def socket(self) -> Path:
        return self.root / "docker2.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    @property
    def tls_url(self) -> str:
        return f"tcp://127.0.0.1:{self.tls_port}"

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=10)

    def start(self) -> None:
        """Start the engine; again, up to twice, when it gave up waiting for its own containerd
        (it does after a fixed wait, which a machine busy with the whole suite once passed)."""
        for attempt in range(3):
            try:
                self._start_once()
                return
            except EngineGaveUp:
                self.kill()  # a containerd that came up too late
                if attempt == 2:
                    raise

    def _start_once(self) -> None:
        log = open(self.root / "dockerd.log", "ab")
        hiding = (
            []
            if self.hidden is None
            else [
                *("unshare", "--mount", "--propagation", "private", "--"),
                *("sh", "-c", 'mount -t tmpfs tmpfs "$0" && exec "$@"', str(self.hidden)),
            ]
        )
        self.process = subprocess.Popen(
            [
                *hiding,
                shutil.which("dockerd") or "dockerd",
                *("--iptables=false", "--ip-masq=false", "--bridge=none"),
                *("-H", self.url, "--data-root", str(self.root / "data")),
                *("--exec-root", str(self.root / "exec"), "--pidfile", str(self.root / "pid")),
                *self._tls_options(),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                tail = self._log_tail()
                if "failed to start containerd" in tail:
                    raise EngineGaveUp(f"the second dockerd gave up on containerd: {tail}")
                raise RuntimeError(f"the second dockerd exited: {tail}")
            with contextlib.suppress(Exception):
                if self.client().ping():
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the second dockerd did not answer: {self._log_tail()}")
            time.sleep(0.05)

    def _tls_options(self) -> list[str]:
        if self.tls is None:
            return []
        if not self.tls_port:
            with socket.socket() as probe:  # a free port, kept across restarts
                probe.bind(("127.0.0.1", 0))
                self.tls_port = probe.getsockname()[1]
        tls = self.tls
        return [
            *("--tlsverify", "--tlscacert", str(tls.ca)),
            *("--tlscert", str(tls.server_cert), "--tlskey", str(tls.server_key)),
            *("-H", self.tls_url),
        ]

    def _log_tail(self) -> str:
        return (self.root / "dockerd.log").read_text(errors="replace")[-2000:]

    def _ours(self) -> list[int]:
        """The engine's processes: every one whose command line names our root (dockerd,
        its containerd, the containers' shims)."""
        found = []
        marker = str(self.root).encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError):
                if marker in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
        return found

    def kill(self) -> None:
        """The host dies: every process of the engine and of its containers, SIGKILL."""
        pids: list[int] = []
        with contextlib.suppress(Exception):
            for container in self.client().containers.list():
                pids.append(int(container.attrs["State"]["Pid"]))
        pids += self._ours()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait(10)
            self.process = None
        for pid in self._ours():  # a shim that outlived its engine
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        """Remove its containers, then end it at once: an engine asked to stop takes seconds
        to shut containerd down, and with no container left nothing is lost by a kill."""
        if self.process is not None:
            with contextlib.suppress(Exception):
                for container in self.client().containers.list(all=True):
                    container.remove(force=True)
        self.kill()
        # the engine mounts its data root on itself; killed, it leaves the mount behind
        subprocess.run(["umount", "-l", str(self.root / "data")], capture_output=True, check=False)


def load_sandbox_image(engine: SecondEngine, archive: Path) -> None:
    """Load the sandbox image saved in ``archive`` (``docker save``) into ``engine``."""
    loading = subprocess.run(
        ["docker", "-H", engine.url, "load", "-q", "-i", str(archive)],
        capture_output=True,
        check=False,
    )
    if loading.returncode != 0:
        raise RuntimeError(
            f"loading the sandbox image into {engine.url} failed: {loading.stderr!r}"
        )


@contextlib.contextmanager
def more_engines(base_image: str, count: int = 2) -> Iterator[list[SecondEngine]]:
    """``count`` started engines besides the system's, each with the sandbox image (loaded
    side by side), stopped and removed at the end. The pool's tests use engines of their
    own only: the system engine's sandboxes come and go with every other test."""
    # short roots: a Unix socket's path must stay under ~100 bytes
    engines = [SecondEngine(Path(tempfile.mkdtemp(prefix="chronicle-d2-"))) for _ in range(count)]
    # the last one is also served over TCP with mutual TLS (a tcp:// entry of docker_hosts)
    engines[-1].tls = make_tls_files(engines[-1].root / "tls")
    try:
        for engine in engines:
            engine.start()
        # the sandbox image (built on the system's engine when missing: its layers hold the
        # base image's), saved once and loaded into every engine side by side
        tag, _ = ensure_image(docker.from_env(), base_image)
        archive = engines[0].root / "sandbox-image.tar"
        subprocess.run(["docker", "save", "-o", str(archive), tag], check=True)
        with ThreadPoolExecutor(count) as loading:
            list(loading.map(lambda engine: load_sandbox_image(engine, archive), engines))
        archive.unlink()
        yield engines
    finally:
        for engine in engines:
            engine.stop()
            # its image's many small files take half a minute to delete on a busy disk: that
            # goes on after the run, in a process of its own
            subprocess.Popen(["rm", "-rf", str(engine.root)], start_new_session=True)
