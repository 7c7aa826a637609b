"""The default runtime: the whole action server in a bubblewrap jail on this machine.

The server, its shell, its file actions and every command run inside the jail (``jail``): a
new user namespace with no capabilities, a whitelist of read-only system directories, the
workspace read-write, a private /tmp, no network unless asked for, a cleared environment.
It serves on a Unix socket whose path stays in a private host directory: we bind and listen,
and hand the jail only the listening descriptor, so nothing inside can reach, replace or
squat the path. The token travels through a pipe into a file the server deletes at once.

Limits (``SandboxLimits``) hold through a per-sandbox cgroup where one can be made
(``cgroup``) and through resource limits on the shell and its commands. Without bubblewrap
(``jail="none"``, or ``"auto"`` where it is not installed) the server runs unconfined, with a
loud warning.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal

from app.runtime.attached import ClientRuntime
from app.runtime.client import SandboxClient
from app.runtime.errors import SandboxStartError
from app.runtime.image import RUNTIME_IMAGE_DIR
from app.runtime.local.cgroup import SandboxCgroup, enter_cgroup
from app.runtime.local.jail import TOKEN_FILE, Jail, find_bwrap, sandbox_environment, system_python
from app.runtime.local.limits import SandboxLimits
from app.runtime.local.private_mounts import bind_privately, mount_points
from app.runtime.local.private_mounts import remove_stale as remove_stale_mount_points
from app.runtime.sandbox_user import SandboxUser, prepare_workspace
from app.runtime.special_bits import clear_special_bits

log = logging.getLogger(__name__)

READY_PREFIX = "CHRONICLE_SANDBOX_READY "
PR_SET_PDEATHSIG = 1
SOCKET_NAME = "sandbox.sock"
PRIVATE_PREFIX = "chronicle-sandbox-"
#: A private directory whose socket nobody serves for this long was left by a crashed owner.
STALE_AFTER = 60.0
TOKEN_NAME = "token"
SERVER_PACKAGE = RUNTIME_IMAGE_DIR / "chronicle_sandbox"
#: -E: no PYTHON* variables, -s: no user site, -B: no bytecode written.
PYTHON_FLAGS = ("-E", "-s", "-B")
UNJAILED_WARNING = (
    "the local sandbox runs WITHOUT a jail: its commands have this user's full rights on "
    "this machine (files, network, other processes, the database's socket). Install "
    "bubblewrap (apt-get install bubblewrap) and use jail='bwrap' or 'auto' to confine them."
)


ROOT_UNBOUNDED_WARNING = (
    "no cgroup could bound the unjailed local sandbox's processes, and the kernel never "
    "applies RLIMIT_NPROC to root: a fork loop in it is bounded only by the machine's own "
    "limits. Use the jail (it runs as an unprivileged uid, so RLIMIT_NPROC holds), run "
    "Chronicle as a non-root user, or where it may make cgroups (cgroup v1 pids, or a "
    "delegated cgroup v2 subtree with the pids controller)."
)


def die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when we die, so no sandbox outlives a crash."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def remove_stale_private_dirs() -> None:
    """Remove our sandboxes' private directories that a crashed owner left behind: ours, older
    than ``STALE_AFTER``, and with nothing serving their socket any more (and the empty
    mount-point directories of ``private_mounts``)."""
    remove_stale_mount_points(STALE_AFTER)
    for directory in Path(tempfile.gettempdir()).glob(f"{PRIVATE_PREFIX}*"):
        try:
            info = directory.lstat()
            if info.st_uid != os.geteuid() or time.time() - info.st_mtime < STALE_AFTER:
                continue
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(str(directory / SOCKET_NAME))
        except (ConnectionRefusedError, FileNotFoundError):
            shutil.rmtree(directory, ignore_errors=True)
        except OSError:
            continue


def child_setup(
    procs_files: list[bytes],
    user: SandboxUser | None = None,
    binds: list[tuple[bytes, bytes]] | None = None,
) -> Callable[[], None]:
    """The ``preexec_fn`` of the sandbox: while still root, make what the jail binds reachable
    (``private_mounts``) and enter its cgroup; then become ``user`` (no supplementary groups)
    and die with us (a change of uid clears that)."""

    def setup() -> None:
        if binds:
            bind_privately(binds)
        enter_cgroup(procs_files)
        if user is not None:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
        die_with_parent()

    return setup


class LocalRuntime(ClientRuntime):
    name = "local"

    def __init__(
        self,
        workspace: str | Path,
        *,
        jail: Literal["auto", "bwrap", "none"] = "auto",
        network: bool = False,
        no_output_timeout: float = 10.0,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        hidden_paths: Iterable[str | Path] = (),
        sandbox_uid: int = 10001,
    ) -> None:
        """``env`` is the sandbox's whole environment beyond a small allow-list (PATH, LANG,
        LC_*, TERM, TZ; HOME is the workspace): this process's own is never passed on.
        ``hidden_paths`` are masked in the jail when they would be visible (say a config file
        or data directory under /etc). ``python`` runs the server (default: the system's).
        ``sandbox_uid``: who the jail runs as when Chronicle is root and the workspace is
        root's or new (``app.runtime.sandbox_user``); the jail's root is that uid outside."""
        self.workspace = Path(workspace).resolve()
        self.jail = jail
        self.network = network
        self.no_output_timeout = no_output_timeout
        self.python = python
        self.env = dict(env or {})
        self.limits = limits if limits is not None else SandboxLimits()
        self.hidden_paths = tuple(Path(p) for p in hidden_paths)
        self.sandbox_uid = sandbox_uid
        #: Who the jail runs as, when not this process's user (Chronicle runs as root).
        self.user: SandboxUser | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.client: SandboxClient | None = None
        self.cgroup: SandboxCgroup | None = None
        self._private: Path | None = None
        self._mounts: Path | None = None
        self._binds: list[tuple[bytes, bytes]] = []
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_task: asyncio.Task[None] | None = None

    def _jail_kind(self) -> Literal["bwrap", "none"]:
        if self.jail == "none":
            log.warning(UNJAILED_WARNING)
            return "none"
        if find_bwrap():
            return "bwrap"
        if self.jail == "bwrap":
            raise SandboxStartError(
                "bubblewrap (bwrap) is not installed; install it (apt-get install bubblewrap)"
            )
        log.warning("bubblewrap (bwrap) is not installed: %s", UNJAILED_WARNING)
        return "none"

    def _server_args(self, kind: str, listen_fd: int, token_file: str) -> list[str]:
        args = [
            "-m", "chronicle_sandbox",
            "--workspace", str(self.workspace),
            "--listen-fd", str(listen_fd),
            "--token-file", token_file,
            "--no-output-timeout", str(self.no_output_timeout),
        ]  # fmt: skip
        limits = self.limits
        cgroup = self.cgroup
        if limits.processes is not None and kind == "bwrap":
            # Counts the processes of the jail's own user namespace only. The jail's user on
            # the host is never root (``sandbox_user``), so the kernel applies it.
            args += ["--limit-processes", str(limits.processes)]
        if limits.memory_bytes is not None and not (cgroup and cgroup.bounds_memory):
            # Address space is a coarse stand-in for memory (programs that reserve a lot, like
            # a JVM, may not start under it), so it is used only when no cgroup bounds memory.
            args += ["--limit-memory", str(limits.memory_bytes)]
        if limits.file_size_bytes is not None:
            args += ["--limit-file-size", str(limits.file_size_bytes)]
        if limits.cpu_seconds is not None:
            args += ["--limit-cpu", str(limits.cpu_seconds)]
        if limits.workspace_mb is not None:
            args += ["--limit-workspace-mb", str(limits.workspace_mb)]
        return args

    async def start(self) -> None:
        kind = self._jail_kind()
        if self.python is not None and not os.access(self.python, os.X_OK):
            raise SandboxStartError(f"could not run {self.python}: not an executable file")
        self.user = None
        if kind == "bwrap" and os.geteuid() == 0:
            self.user = await asyncio.to_thread(prepare_workspace, self.workspace, self.sandbox_uid)
        self.workspace.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(remove_stale_private_dirs)
        self._private = Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))  # 0700, ours
        socket_path = self._private / SOCKET_NAME
        token = secrets.token_urlsafe(32)
        self.cgroup = await asyncio.to_thread(SandboxCgroup.create, uuid.uuid4().hex, self.limits)
        if (
            os.geteuid() == 0
            and self.user is None  # unjailed: it runs as root
            and self.limits.processes
            and not (self.cgroup and self.cgroup.bounds_processes)
        ):
            log.warning(ROOT_UNBOUNDED_WARNING)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        token_read, token_write = os.pipe()
        try:
            listener.bind(str(socket_path))
            listener.listen(128)
            os.write(token_write, token.encode())
            os.close(token_write)
            token_write = -1
            if kind == "bwrap":
                argv, cwd, pass_fds = self._jailed(listener.fileno(), token_read)
            else:
                argv, cwd, pass_fds = self._unjailed(listener.fileno(), token)
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *argv,
                    cwd=cwd,
                    env=sandbox_environment(self.workspace, self.env),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    start_new_session=True,  # its own process group: close() takes it all down
                    preexec_fn=child_setup(
                        self.cgroup.procs_files() if self.cgroup else [], self.user, self._binds
                    ),
                    pass_fds=pass_fds,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                await self.close()  # a failing preexec_fn (the cgroup) is a SubprocessError
                raise SandboxStartError(f"could not run {argv[0]}: {exc}") from None
        finally:
            listener.close()  # the jail holds its own copy now
            os.close(token_read)
            if token_write >= 0:
                os.close(token_write)
        self._stderr_task = asyncio.create_task(self._collect_stderr())
        await self._wait_started(kind)
        self.client = SandboxClient("http://sandbox", token, unix_socket=str(socket_path))

    def _jailed(self, listen_fd: int, token_fd: int) -> tuple[list[str], str, tuple[int, ...]]:
        bwrap = find_bwrap()
        assert bwrap is not None
        python, prefix = system_python(self.python)
        jail = Jail(
            workspace=self.workspace,
            server_package=SERVER_PACKAGE,
            python_prefix=prefix,
            network=self.network,
            hidden_paths=self.hidden_paths,
        )
        server = [python, *PYTHON_FLAGS, *self._server_args("bwrap", listen_fd, TOKEN_FILE)]
        sources: dict[Path, Path] = {}
        if self.user is not None:  # it may not reach them: bound where it can (private_mounts)
            wanted = [self.workspace, SERVER_PACKAGE, *([prefix] if prefix else [])]
            self._mounts, sources = mount_points(wanted)
            self._binds = [(os.fsencode(a), os.fsencode(b)) for a, b in sources.items()]
        argv = jail.argv(bwrap, server, token_fd=token_fd, sources=sources)
        return argv, "/", (listen_fd, token_fd)

    def _unjailed(self, listen_fd: int, token: str) -> tuple[list[str], str, tuple[int, ...]]:
        assert self._private is not None
        token_file = self._private / TOKEN_NAME
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(token)
        python = self.python or sys.executable
        server = [python, *PYTHON_FLAGS, *self._server_args("none", listen_fd, str(token_file))]
        return server, str(RUNTIME_IMAGE_DIR), (listen_fd,)

    async def _collect_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        async for line in self.process.stderr:
            self._stderr.append(line.decode(errors="replace").rstrip())

    async def _wait_started(self, kind: str) -> None:
        assert self.process is not None and self.process.stdout is not None
        try:
            async with asyncio.timeout(15):
                line = (await self.process.stdout.readline()).decode()
        except TimeoutError:
            line = ""
        if line.startswith(READY_PREFIX):
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1):  # let the last words arrive
                await self.process.wait()
                if self._stderr_task is not None:
                    await self._stderr_task
        detail = "\n".join(self._stderr) or "no output"
        await self.close()
        hint = ""
        if kind == "bwrap" and "bwrap:" in detail:
            hint = (
                "\nbubblewrap could not build the jail. Where unprivileged user namespaces are "
                "forbidden (sysctl kernel.unprivileged_userns_clone, AppArmor's "
                "apparmor_restrict_unprivileged_userns), allow them for bwrap."
            )
        raise SandboxStartError(f"the local sandbox did not start: {detail}{hint}")

    async def close(self) -> None:
        # A sandbox that never said it was ready has nothing to finish: it is killed at once.
        # (Its server may not have its SIGTERM handler yet, and as the first process of the
        # jail's PID namespace it ignores a SIGTERM without one: closing a pool while a spare
        # sandbox started waited out the whole grace.)
        started = self.client is not None
        await self._close_client()
        process, self.process = self.process, None
        if process is not None and process.returncode is None:
            await _end(process, grace=5.0 if started else 0.0)
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is not None:
            await asyncio.to_thread(cgroup.destroy)
        if process is not None:  # every process of it is gone: no setuid/setgid file stays
            await asyncio.to_thread(clear_special_bits, self.workspace)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task
            self._stderr_task = None
        private, self._private = self._private, None
        if private is not None:
            await asyncio.to_thread(shutil.rmtree, private, True)
        mounts, self._mounts, self._binds = self._mounts, None, []
        if mounts is not None:  # empty directories here: the binds were the jail's alone
            await asyncio.to_thread(shutil.rmtree, mounts, True)


#: How long a killed sandbox may take to be reaped before close() stops waiting on it.
KILLED_EXIT_WAIT = 10.0


async def _end(process: asyncio.subprocess.Process, *, grace: float) -> None:
    """SIGTERM to the sandbox's process group, ``grace`` seconds to exit, then SIGKILL.

    It waits for the process's exit, not for ``process.wait()``: on Python 3.11 that waits
    for its stdout and stderr to close as well, and a process of the jail that outlived it
    (killed only with the cgroup, after this) holds them open: closing a pool while its spare
    sandbox started waited for ever. One not reaped 10 s after SIGKILL (stuck in the kernel)
    is logged and left to the child watcher."""
    if grace > 0:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        if await _exited(process, grace):
            return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    if not await _exited(process, KILLED_EXIT_WAIT):
        log.error("the local sandbox (pid %d) did not exit %gs after SIGKILL", process.pid,
                  KILLED_EXIT_WAIT)  # fmt: skip


async def _exited(process: asyncio.subprocess.Process, timeout: float) -> bool:
    """Whether the process exited within ``timeout`` seconds (its pipes may stay open)."""
    deadline = time.monotonic() + timeout
    while process.returncode is None:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
