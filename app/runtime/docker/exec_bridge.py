"""Reaching a sandbox's action server on an engine that shares no files with the worker.

On one machine the server's Unix socket is in a directory the worker sees. A remote engine's
container has its socket on the remote machine, and with the sandbox's networking off there
is no port to reach either. What every engine offers is ``docker exec`` over its API (a Unix
socket, TLS or SSH alike): ``ExecBridge`` listens on a Unix socket in the worker's private
session directory and, for each connection made to it, starts a small program in the
container that joins the exec's stdin and stdout to the server's socket. The sandbox's client
connects to the bridge exactly as it would to the server's own socket.

Without a TTY, an exec's output comes in frames: an 8-byte header (stream 1 stdout or 2
stderr, then the length) before each piece. Stdout is the server's bytes; stderr is the
bridge program's own complaint (the server is not listening yet, say), logged.

Each connection has two threads (the engine's SDK is blocking); a connection ends when either
side closes, and ``close`` ends them all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker.errors

log = logging.getLogger(__name__)

#: Run in the container: stdin to the server's socket, the server's answers to stdout.
BRIDGE_PROGRAM = """\
import os, socket, sys, threading
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
def up():
    try:
        while True:
            b = os.read(0, 65536)
            if not b:
                break
            s.sendall(b)
    except OSError:
        pass
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
threading.Thread(target=up, daemon=True).start()
out = sys.stdout.buffer
while True:
    b = s.recv(65536)
    if not b:
        break
    out.write(b)
    out.flush()
"""

#: Run in the container by the reaper: the server's ``/alive`` answer, or nothing.
ALIVE_PROGRAM = """\
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(b"GET /alive HTTP/1.1\\r\\nHost: sandbox\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.split(b"\\r\\n\\r\\n", 1)[-1].decode("utf-8", "replace"))
"""

STDOUT, STDERR = 1, 2
#: A frame's header: the stream, three bytes of nothing, the length (big-endian).
HEADER = struct.Struct(">BxxxL")


class ExecBridge:
    """A Unix socket at ``listen`` whose every connection reaches ``target`` (the server's
    socket inside ``container_id``) through an exec run as ``user``."""

    def __init__(self, api: Any, container_id: str, target: str, listen: Path, user: str) -> None:
        self.api = api
        self.container_id = container_id
        self.target = target
        self.user = user
        self.listen = listen
        self._listener = socket.socket(socket.AF_UNIX)
        self._listener.bind(str(listen))
        self._listener.listen(64)
        self._open: set[socket.socket] = set()
        self._remotes: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="exec-bridge", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._open.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        remote = None
        try:
            exec_id = self.api.exec_create(
                self.container_id,
                ["python3", "-c", BRIDGE_PROGRAM, self.target],
                stdin=True, stdout=True, stderr=True, user=self.user,
            )["Id"]  # fmt: skip
            remote = self.api.exec_start(exec_id, socket=True)
        except (docker.errors.DockerException, OSError) as exc:
            log.info("exec bridge to %s: %s", self.container_id[:12], exc)
            self._drop(conn, None)
            return
        with self._lock:
            self._remotes.append(remote)
        threading.Thread(target=self._upstream, args=(conn, remote), daemon=True).start()
        try:
            self._downstream(remote, conn)
        finally:
            self._drop(conn, remote)

    def _upstream(self, conn: socket.socket, remote: Any) -> None:
        """The client's bytes to the exec's stdin; the end of one ends both."""
        try:
            while data := conn.recv(65536):
                _send(remote, data)
        except OSError:
            pass
        self._drop(conn, remote)

    def _downstream(self, remote: Any, conn: socket.socket) -> None:
        """The exec's stdout frames to the client, its stderr to the log."""
        complaint = b""
        try:
            for stream, data in frames(remote):
                if stream == STDOUT:
                    conn.sendall(data)
                elif len(complaint) < 4096:
                    complaint += data
        except (OSError, ValueError):
            return  # ValueError: the stream was closed under us (``close``)
        finally:
            if complaint:
                log.debug(
                    "exec bridge to %s: %s",
                    self.container_id[:12], complaint.decode(errors="replace").strip()[-300:],
                )  # fmt: skip

    def _drop(self, conn: socket.socket, remote: Any) -> None:
        with self._lock:
            self._open.discard(conn)
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            conn.close()
        if remote is not None:
            _close(remote)

    def close(self) -> None:
        """Stop listening and end every connection (blocking, briefly)."""
        with self._lock:
            self._closed = True
            conns, self._open = list(self._open), set()
            remotes, self._remotes = self._remotes, []
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for remote in remotes:
            _close(remote)
        with contextlib.suppress(OSError):
            self.listen.unlink()


def frames(remote: Any) -> Iterator[tuple[int, bytes]]:
    """The (stream, bytes) frames of a hijacked exec stream until it ends. Read with plain
    blocking ``recv`` of large pieces: a TLS socket holds decrypted bytes that ``poll`` on
    its descriptor does not see (the SDK's own reader polls, and would wait forever), and an
    exec may be quiet for as long as its command runs (no timeout)."""
    target = _raw(remote)
    with contextlib.suppress(AttributeError, OSError):
        target.settimeout(None)
    receive = _receiver(remote)
    buffer = bytearray()
    while True:
        while len(buffer) >= HEADER.size:
            stream, size = HEADER.unpack_from(buffer)
            if len(buffer) < HEADER.size + size:
                break
            data = bytes(buffer[HEADER.size : HEADER.size + size])
            del buffer[: HEADER.size + size]
            yield stream, data
        piece = receive(65536)
        if not piece:
            return
        buffer += piece


def idle_seconds(container: Any, target: str, user: str) -> float | None:
    """The server's idle time asked through an exec (the reaper's check), None when it does
    not answer (blocking). The exec's stream is read here as the bridge reads its own: the
    SDK's ``exec_run`` hands an ``ssh://`` engine's finished connection back to its pool,
    where the next request finds the ssh program gone."""
    api = container.client.api
    remote = None
    try:
        exec_id = api.exec_create(
            container.id, ["python3", "-c", ALIVE_PROGRAM, target], stdout=True, user=user
        )["Id"]
        remote = api.exec_start(exec_id, socket=True)
        answer = b"".join(data for stream, data in frames(remote) if stream == STDOUT)
    except (docker.errors.DockerException, OSError, ValueError):
        return None
    finally:
        if remote is not None:
            _close(remote)
    try:
        return float(json.loads(answer).get("idle", 0.0))
    except (ValueError, TypeError, AttributeError):
        return None


def _raw(remote: Any) -> Any:
    """The object that sends: a Unix engine's hijacked stream is a ``SocketIO`` around it."""
    return getattr(remote, "_sock", remote) if isinstance(remote, socket.SocketIO) else remote


def _receiver(remote: Any) -> Callable[[int], bytes]:
    """What reads what has arrived, up to n bytes, without waiting for all n: ``recv``, but
    an ``ssh://`` engine's stream is the ssh program's stdout, whose ``recv`` is a buffered
    ``read(n)`` that waits for n bytes (``read1`` takes what is there)."""
    target = _raw(remote)
    process = getattr(target, "proc", None)
    if process is not None and hasattr(process.stdout, "read1"):
        return process.stdout.read1  # type: ignore[no-any-return]
    if hasattr(target, "recv"):
        return target.recv  # type: ignore[no-any-return]
    return remote.read  # type: ignore[no-any-return]


def _send(remote: Any, data: bytes) -> None:
    target = _raw(remote)
    if hasattr(target, "sendall"):
        target.sendall(data)
    else:
        target.write(data)


def _close(remote: Any) -> None:
    target = _raw(remote)
    with contextlib.suppress(Exception):
        target.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):
        target.close()
    with contextlib.suppress(Exception):
        remote.close()
