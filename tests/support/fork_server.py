"""A process that has imported Chronicle's libraries once and forks a `chronicle` command for
each request: what the system tests start their ~700 `chronicle` processes from.

A `chronicle` process spends most of its CPU importing before it does anything: 0.6 s for the
CLI's libraries and 4-5 s more for litellm in every process that calls a model (a server, a
worker, `chronicle run`), about half of the whole suite's CPU on a 2-core machine. A fork of a
process that imported them already starts in milliseconds, as gunicorn's ``--preload`` or
Android's zygote do. The fork is a real process all the same: its own pid, environment,
working directory, stdin/stdout/stderr (the caller's pipes, passed over the socket), signals
and exit status; it runs the command's ``__main__`` as ``python -m app.cli`` runs it and ends
through the interpreter's own exit (atexit, threads joined, SIGINT's exit status). What
differs from an exec: the libraries are already imported, and its parent is this server
(``tests/support/forked.py`` gives the test a ``Popen`` all the same).

Only third-party libraries and ``app.cli`` are imported here: a module of ours that a command
imports on its way is imported by the fork, as by a fresh process.

Run as ``python -m tests.support.fork_server SOCKET``; it ends when its stdin closes (the test
process that started it has gone).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import io
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
from typing import Any

#: What every `chronicle` process imports, and the heavy libraries some of them import later.
PRELOADED = (
    "app.cli",
    "litellm",
    "litestar",
    "uvicorn",
    "httpx",
    "openai",
    "aiohttp",
    "docker",
    "rich",
    "yaml",
    "pygments",
    "msgspec",
    "multipart",
)


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One request: its length-prefixed JSON and the three descriptors sent with it."""
    header, fds, _flags, _addr = socket.recv_fds(connection, 8, 3)
    size = int.from_bytes(header, "big")
    body = b""
    while len(body) < size:
        chunk = connection.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the request ended early")
        body += chunk
    return json.loads(body), list(fds)


def _serve(listener: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """Fork one child per request; returns only in a child, with its request."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "child")
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "parent")
    waiting: dict[int, socket.socket] = {}
    while True:
        for key, _ in selector.select():
            if key.data == "parent":
                if not os.read(sys.stdin.fileno(), 4096):
                    sys.exit(0)
            elif key.data == "child":  # one SIGCHLD or more: every ended child is reaped
                os.read(wake_read, 4096)
                _reap(waiting)
            else:
                connection, _ = listener.accept()
                try:
                    request, fds = _receive(connection)
                except (OSError, ValueError):
                    connection.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    selector.close()
                    for other in (listener, connection, *waiting.values()):
                        other.close()
                    os.close(wake_read)
                    os.close(wake_write)
                    return request, fds
                for fd in fds:
                    os.close(fd)
                connection.sendall(f"pid {pid}\n".encode())
                waiting[pid] = connection


def _reap(waiting: dict[int, socket.socket]) -> None:
    """Tell each ended child's caller how it ended: its raw wait status, which the caller's
    Popen reads as it reads its own children's."""
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = waiting.pop(pid, None)
        if connection is not None:
            try:
                connection.sendall(f"exit {status}\n".encode())
            except OSError:
                pass  # the caller went away: nobody asks any more
            connection.close()


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Turn this fork into the requested command's process (before its ``__main__`` runs)."""
    if request.get("new_session"):
        os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, gone already
    _fresh_stdio()
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = ["-m", *request["args"]]


def _fresh_stdio() -> None:
    """``sys.stdin``, ``stdout`` and ``stderr`` made anew for descriptors 0-2, as an
    interpreter's start makes them: the server's were made for its own (a file is seekable, a
    pipe is not, and a terminal is line-buffered)."""
    encoding = sys.stdout.encoding
    for name, fd, mode in (("stdin", 0, "rb"), ("stdout", 1, "wb"), ("stderr", 2, "wb")):
        old = getattr(sys, name)
        stream = io.TextIOWrapper(
            open(fd, mode, closefd=False),
            encoding=encoding,
            errors=old.errors,
            # stderr is line-buffered always, stdout on a terminal (as at an interpreter's start)
            line_buffering=fd == 2 or (fd == 1 and os.isatty(fd)),
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def main() -> None:
    path = sys.argv[1]
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            if name == "app.cli":
                raise
            # a library this checkout does not have: the commands that need it say so
    gc.collect()
    gc.freeze()  # the children's collections leave the shared pages alone
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    request, fds = _serve(listener)
    _become(request, fds)
    os._exit(_run_command())


def _run_command() -> int:
    """Run ``app.cli``'s ``__main__`` and end as an interpreter ends, without tearing down
    the modules: a teardown touches every object the server imported, which copies their
    pages into this process, a quarter of a second for nothing."""
    code = 0
    interrupted: Any = None
    try:
        runpy.run_module("app.cli", run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        code = _exit_code(exit.code)
    except KeyboardInterrupt:
        interrupted = sys.exc_info()
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what finalization does first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if interrupted is not None:
        # an uncaught KeyboardInterrupt ends an interpreter by SIGINT (status -2)
        sys.excepthook(*interrupted)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _exit_code(code: object) -> int:
    """The status ``SystemExit(code)`` ends an interpreter with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
