"""``chronicle`` processes for the tests: forked by ``tests/support/fork_server.py`` (libraries
imported once) and handed back as a ``subprocess.Popen``, or started afresh.

``chronicle_popen(args, ...)`` takes Popen's keyword arguments and returns a ``Popen``:
``pid`` is the command's own process (signals go to it), ``wait``, ``poll``, ``communicate``
and the pipes behave as Popen's. Only its exit status travels differently: the fork server
is the process's parent, so it reports the status over the socket the request came on.

``CHRONICLE_TEST_FORK=0`` starts every command with a fresh interpreter instead (what a test
about a process's start does anyway: ``fresh=True``); the whole suite passes either way.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Variables a fork cannot honour (they act when an interpreter starts): such a request execs.
_AT_START = ("PYTHON", "LITELLM_", "LC_", "LANG")


def _at_start(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name.startswith(_AT_START)}


def forking() -> bool:
    return os.environ.get("CHRONICLE_TEST_FORK", "1") != "0"


class ForkServerUnavailable(RuntimeError):
    """The fork server could not start: the command starts afresh."""


class _ForkServer:
    """This test process's fork server, started at its first request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._path: str | None = None
        self._started_with: dict[str, str] = {}
        #: why it could not start (then every command starts afresh)
        self.broken: str | None = None
        atexit.register(self._stop)

    def path(self) -> str:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()
            assert self._path is not None
            return self._path

    def honours(self, env: dict[str, str]) -> bool:
        """Whether a fork runs as a fresh process with ``env`` would (see ``_AT_START``), and
        the fork server can run (a broken one is said once, as a warning)."""
        if self.broken is not None:
            return False
        with self._lock:
            # a server not started yet will start with this process's environment
            started_with = (
                self._started_with if self._process is not None else _at_start(os.environ)
            )
            return started_with == _at_start(env)

    def _start(self) -> None:
        self._started_with = _at_start(os.environ)
        directory = tempfile.mkdtemp(prefix="chronicle-forks-")
        self._path = os.path.join(directory, "socket")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fork_server", self._path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if line.strip() != b"ready":
            self._process.kill()
            self._process.wait()
            self._process = None
            self.broken = f"the fork server did not start ({line!r}): commands start afresh"
            warnings.warn(self.broken, stacklevel=2)
            raise ForkServerUnavailable(self.broken)

    def _stop(self) -> None:
        """At exit: the fork server ends, its socket's directory goes."""
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()  # it ends when its stdin does
            self._process.wait(timeout=10)
        if self._path is not None:
            shutil.rmtree(os.path.dirname(self._path), ignore_errors=True)


_SERVER = _ForkServer()


class ForkedPopen(subprocess.Popen):  # type: ignore[type-arg]
    """A Popen whose child is forked by the fork server instead of exec'd here."""

    _connection: socket.socket
    _status: bytes

    def _execute_child(  # type: ignore[override]
        self, args: Any, executable: Any, preexec_fn: Any, close_fds: Any, pass_fds: Any,
        cwd: Any, env: Any, startupinfo: Any, creationflags: Any, shell: Any,
        p2cread: int, p2cwrite: int, c2pread: int, c2pwrite: int, errread: int, errwrite: int,
        restore_signals: Any, gid: Any, gids: Any, uid: Any, umask: Any,
        start_new_session: bool, process_group: Any,
    ) -> None:  # fmt: skip
        fds = [p2cread if p2cread != -1 else 0, c2pwrite if c2pwrite != -1 else 1,
               errwrite if errwrite != -1 else 2]  # fmt: skip
        request = json.dumps({
            "args": list(args[3:]),  # after [python, -m, app.cli]
            "env": dict(env if env is not None else os.environ),
            "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
            "new_session": bool(start_new_session),
        }).encode()  # fmt: skip
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(_SERVER.path())
            socket.send_fds(connection, [len(request).to_bytes(8, "big")], fds)
            connection.sendall(request)
            self._status = b""
            self._connection = connection
            started = self._line(block=True)
            assert started is not None  # a blocking read gives a line or raises
            self.pid = int(started.removeprefix("pid "))
        except BaseException:
            connection.close()
            raise
        finally:
            # the child has its copies; the parent keeps its own ends, as after an exec
            self._close_pipe_fds(  # type: ignore[attr-defined]  # Popen's own, POSIX
                p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite
            )

    def _line(self, *, block: bool) -> str | None:
        """The server's next line, or None when there is none yet (``block=False``)."""
        while b"\n" not in self._status:
            self._connection.setblocking(block)
            try:
                chunk = self._connection.recv(64)
            except BlockingIOError:
                return None
            if not chunk:
                raise ConnectionError("the fork server went away")
            self._status += chunk
        line, _, self._status = self._status.partition(b"\n")
        return line.decode()

    def _exit_status(self, block: bool) -> tuple[int, int]:
        line = self._line(block=block)
        if line is None:
            return 0, 0
        self._connection.close()
        return self.pid, int(line.removeprefix("exit "))  # raw, as waitpid gives it

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        return self._exit_status(block=not wait_flags & os.WNOHANG)

    def _internal_poll(self, _deadstate: Any = None, *_: Any, **__: Any) -> int | None:
        lock = self._waitpid_lock  # type: ignore[attr-defined]  # Popen's own, POSIX
        if self.returncode is None and lock.acquire(False):
            try:
                if self.returncode is None:
                    pid, status = self._exit_status(block=False)
                    if pid:
                        self._handle_exitstatus(status)  # type: ignore[attr-defined]
            except OSError:
                if _deadstate is not None:
                    self.returncode = _deadstate
            finally:
                lock.release()
        return self.returncode


def chronicle_popen(args: list[str], *, fresh: bool = False, **kwargs: Any) -> subprocess.Popen:
    """``python -m app.cli *args`` as a Popen (keyword arguments as Popen's)."""
    argv = [sys.executable, "-m", "app.cli", *args]
    env = kwargs.get("env")
    if fresh or not forking() or not _SERVER.honours(dict(env if env is not None else os.environ)):
        return subprocess.Popen(argv, **kwargs)
    try:
        return ForkedPopen(argv, **kwargs)
    except ForkServerUnavailable:
        return subprocess.Popen(argv, **kwargs)


def chronicle_run(
    args: list[str], *, input: str | bytes | None = None, timeout: float | None = None,
    check: bool = False, fresh: bool = False, **kwargs: Any,
) -> subprocess.CompletedProcess:  # fmt: skip
    """``subprocess.run`` of ``python -m app.cli *args`` (its arguments), forked where it can be."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with chronicle_popen(args, fresh=fresh, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            process.kill()
            exc.stdout, exc.stderr = process.communicate()
            raise
        except BaseException:
            process.kill()
            raise
    completed = subprocess.CompletedProcess(process.args, process.wait(), stdout, stderr)
    if check:
        completed.check_returncode()
    return completed
