"""The HTTP/JSON face of the sandbox: /alive, /execute, /upload, /download."""

from __future__ import annotations

import hmac
import json
import os
import re
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import PROTOCOL_VERSION
from .actions import Executor, error
from .files import FileActionError, NotFound, TooLarge
from .text import json_bytes

MAX_REQUEST_BYTES = 16 * 1024 * 1024
DRAIN_LIMIT = 256 * 1024 * 1024
#: A connection that sends nothing for this long is closed (its thread is freed).
IDLE_TIMEOUT = 60.0
#: Answers go out in chunks, so the idle timeout bounds a stall, not a slow transfer.
WRITE_CHUNK = 256 * 1024
#: Connections served at once, one thread each; more are answered 503 and closed.
MAX_CONNECTIONS = 64
#: A byte count: digits only (no sign, no "1_000"), and less than a petabyte.
CONTENT_LENGTH = re.compile(r"[0-9]{1,15}")
_BUSY_BODY = b'{"error": "the sandbox serves too many connections; try again"}'
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


class SandboxState:
    """What every request handler shares: the token, the executor, liveness."""

    def __init__(self, token: str, executor: Executor) -> None:
        self.token = token
        self.executor = executor
        self.last_seen = time.monotonic()

    def touch(self) -> None:
        self.last_seen = time.monotonic()


class BoundedThreads(socketserver.ThreadingMixIn):
    """A thread per connection, but never more than ``max_connections`` of them: a
    connection over the bound is answered 503 at once and closed, never queued behind idle
    ones. (Threads also count against the sandbox's pids limit.)"""

    daemon_threads = True
    request_queue_size = 64  # the kernel's queue of connections not yet accepted
    state: SandboxState
    max_connections: int = MAX_CONNECTIONS
    idle_timeout: float = IDLE_TIMEOUT

    def bound(self, state: SandboxState, max_connections: int, idle_timeout: float) -> None:
        self.state = state
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self._slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._turn_away(request)
            return
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no thread could be started (the pids limit)
            self._slots.release()
            self._turn_away(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _turn_away(self, request: socket.socket) -> None:
        """Say "busy" without ever waiting on the client, then close."""
        try:
            request.setblocking(False)
            request.send(BUSY)
        except OSError:
            pass
        try:
            request.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        request.close()


class TCPSandboxServer(BoundedThreads, ThreadingHTTPServer):
    def __init__(
        self,
        address: tuple[str, int],
        state: SandboxState,
        *,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        super().__init__(address, Handler)
        self.bound(state, max_connections, idle_timeout)


class UnixSandboxServer(BoundedThreads, socketserver.UnixStreamServer):
    """The same server on a Unix socket: for containers without a network, and faster."""

    allow_reuse_address = True

    def __init__(
        self,
        path: str | None,
        state: SandboxState,
        listen_fd: int | None = None,
        *,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        """Listen on ``path``, or on the already listening socket ``listen_fd`` (handed in by
        a parent that keeps the socket's path where the sandbox cannot reach it)."""
        self.bound(state, max_connections, idle_timeout)
        if listen_fd is not None:
            super().__init__("", Handler, bind_and_activate=False)
            self.socket.close()
            self.socket = socket.socket(fileno=listen_fd)
            self.socket.set_inheritable(False)  # not for the shell
            self.server_address = self.socket.getsockname()
        else:
            assert path is not None
            if os.path.exists(path):
                os.unlink(path)
            # 0600 from the start: a chmod after bind races the runtime, which may move the
            # socket away as soon as it appears. (Only at start-up; no file is made meanwhile.)
            umask = os.umask(0o177)
            try:
                super().__init__(path, Handler)
            finally:
                os.umask(umask)


class ClientGone(Exception):
    """The client stopped reading or sending (or went silent past the idle timeout)."""


class Handler(BaseHTTPRequestHandler):
    """One connection's requests. Whatever fails while one request is handled is answered
    as that request's error (an ``error`` observation for an action); the server goes on."""

    server: TCPSandboxServer | UnixSandboxServer
    protocol_version = "HTTP/1.1"  # keep-alive: one connection serves many actions

    def setup(self) -> None:
        super().setup()
        # Every read and write of this connection: a client that goes silent frees its thread.
        self.connection.settimeout(self.server.idle_timeout)
        self._answered = False
        # Headers and body go out in separate writes; without NODELAY, Nagle and the client's
        # delayed ACK hold the body back ~40 ms on a keep-alive connection.
        if self.connection.family in (socket.AF_INET, socket.AF_INET6):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def address_string(self) -> str:
        return str(self.client_address or "unix")

    def log_message(self, format: str, *args: Any) -> None:
        if os.environ.get("CHRONICLE_SANDBOX_DEBUG"):
            sys.stderr.write("sandbox: " + format % args + "\n")

    # -- plumbing ------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self._answered = True
        self.log_request(status)
        head = (
            f"{self.protocol_version} {status} {HTTPStatus(status).phrase}\r\n"
            f"Server: {self.version_string()}\r\nDate: {self.date_time_string()}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            # so the client never sends on it again
            + ("Connection: close\r\n" if self.close_connection else "")
            + "\r\n"
        ).encode("latin-1")
        try:
            # The head and the first chunk in one write: the client wakes up once, not twice.
            self.wfile.write(head + body[:WRITE_CHUNK])
            view = memoryview(body)
            for start in range(WRITE_CHUNK, len(body), WRITE_CHUNK):  # the timeout is per chunk
                self.wfile.write(view[start : start + WRITE_CHUNK])
        except OSError as exc:  # a client that hung up or stopped reading
            raise ClientGone(str(exc)) from None

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json_bytes(value))

    def _refuse(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _guarded(self, route: Callable[[], None], action: bool) -> None:
        """Run ``route``; an error in it answers this request alone (500, or an ``error``
        observation for an action) and closes the connection (its state is unknown)."""
        self._answered = False
        try:
            route()
        except ClientGone:
            self.close_connection = True
        except Exception as exc:  # never let one request take the server down
            self.close_connection = True
            if self._answered:
                return  # half an answer went out: closing is all that is left
            message = f"the sandbox failed: {type(exc).__name__}: {exc}"
            try:
                if action:
                    self._json(HTTPStatus.OK, error(message, "internal"))
                else:
                    self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR, message)
            except ClientGone:
                pass

    def _authorised(self) -> bool:
        given = self.headers.get("Authorization", "")
        expected = f"Bearer {self.server.state.token}"
        if hmac.compare_digest(given.encode(), expected.encode()):
            self.server.state.touch()
            return True
        self.close_connection = True  # the request body was not read
        self._refuse(HTTPStatus.UNAUTHORIZED, "missing or wrong sandbox token")
        return False

    def _length(self) -> int | None:
        """The request's declared body length; a 400 (and None) when it is not a byte count."""
        values = self.headers.get_all("Content-Length") or ["0"]
        problem = None
        if self.headers.get("Transfer-Encoding"):
            problem = "a body must come with a Content-Length, not a Transfer-Encoding"
        elif len(set(values)) > 1:
            problem = "the request has more than one Content-Length"
        elif not CONTENT_LENGTH.fullmatch(values[0].strip()):
            problem = f"Content-Length {values[0][:40]!r} is not a byte count"
        if problem is not None:
            self.close_connection = True  # where the body ends is unknown
            self._refuse(HTTPStatus.BAD_REQUEST, problem)
            return None
        return int(values[0])

    def _body(self, limit: int) -> bytes | None:
        length = self._length()
        if length is None:
            return None
        if length > limit:
            if length <= DRAIN_LIMIT:  # read and drop it, so the client hears the answer
                remaining = length
                while remaining > 0:
                    chunk = self._read(min(remaining, 1 << 20))
                    if not chunk:
                        break
                    remaining -= len(chunk)
            else:
                self.close_connection = True  # an unread body would poison the connection
            self._refuse(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"request of {length:,} bytes is over the {limit:,}-byte limit",
            )
            return None
        data = self._read(length)
        if len(data) < length:
            raise ClientGone("the request body ended early")
        return data

    def _read(self, size: int) -> bytes:
        try:
            return self.rfile.read(size)
        except OSError as exc:  # the idle timeout while a body trickles in, or a reset
            raise ClientGone(str(exc)) from None

    def _query_path(self, *, body_unread: bool = False) -> str | None:
        """The ``path`` query parameter, or None once a 400 went out (closing the connection
        when a body is left unread)."""
        values = parse_qs(urlsplit(self.path).query).get("path")
        path = values[0] if values else ""
        try:
            if not path:
                raise ValueError("the 'path' query parameter is required")
            self.server.state.executor.files.paths.relative(path)
        except ValueError as exc:
            self.close_connection = self.close_connection or body_unread
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
            return None
        return path

    # -- routes --------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._guarded(self._get, action=False)

    def do_POST(self) -> None:
        route = urlsplit(self.path).path
        self._guarded(self._post, action=route == "/execute")

    def _get(self) -> None:
        route = urlsplit(self.path).path
        if route == "/alive":
            idle = round(time.monotonic() - self.server.state.last_seen, 3)
            alive = {"ok": True, "protocol": PROTOCOL_VERSION, "pid": os.getpid(), "idle": idle}
            self._json(HTTPStatus.OK, alive)
        elif route == "/download":
            if self._authorised():
                self._download()
        else:
            self._refuse(HTTPStatus.NOT_FOUND, f"no route {route}")

    def _download(self) -> None:
        path = self._query_path()
        if path is None:
            return
        files = self.server.state.executor.files
        try:
            data = files.read_bytes(path, MAX_REQUEST_BYTES)
        except NotFound as exc:
            self._refuse(HTTPStatus.NOT_FOUND, str(exc))
        except TooLarge as exc:
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, str(exc))
        except FileActionError as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
        else:
            self._send(HTTPStatus.OK, data, "application/octet-stream")

    def _post(self) -> None:
        route = urlsplit(self.path).path
        if route == "/heartbeat":
            if self._authorised():
                self._json(HTTPStatus.OK, {"ok": True})
            return
        if route not in ("/execute", "/upload"):
            self.close_connection = True  # the body was not read
            self._refuse(HTTPStatus.NOT_FOUND, f"no route {route}")
            return
        if not self._authorised():
            return
        if route == "/upload":
            self._upload()
        else:
            self._execute()

    def _upload(self) -> None:
        path = self._query_path(body_unread=True)
        if path is None:
            return
        data = self._body(MAX_REQUEST_BYTES)
        if data is None:
            return
        files = self.server.state.executor.files
        try:
            files.write_bytes(path, data)
        except FileActionError as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
            return
        self._json(HTTPStatus.OK, {"path": files.paths.shown(path), "bytes": len(data)})

    def _execute(self) -> None:
        body = self._body(MAX_REQUEST_BYTES)
        if body is None:
            return
        try:
            action = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._json(HTTPStatus.OK, error(f"the action is not JSON: {exc}", "invalid_action"))
            return
        self._json(HTTPStatus.OK, self.server.state.executor.execute(action))


def serve(
    state: SandboxState,
    *,
    host: str,
    port: int,
    unix_socket: str | None = None,
    listen_fd: int | None = None,
    max_connections: int = MAX_CONNECTIONS,
    idle_timeout: float = IDLE_TIMEOUT,
) -> None:
    server: TCPSandboxServer | UnixSandboxServer
    if unix_socket or listen_fd is not None:
        server = UnixSandboxServer(
            unix_socket,
            state,
            listen_fd,
            max_connections=max_connections,
            idle_timeout=idle_timeout,
        )
        where = str(server.server_address or unix_socket)
    else:
        server = TCPSandboxServer(
            (host, port), state, max_connections=max_connections, idle_timeout=idle_timeout
        )
        where = str(server.server_address[1])
    # The parent reads this line to learn where to connect (port 0 picks a free port).
    print(f"CHRONICLE_SANDBOX_READY {where}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        state.executor.shell.close()
