"""The HTTP/JSON face of the sandbox: /alive, /execute, /upload, /download."""

from __future__ import annotations

import hmac
import json
import os
import socket
import socketserver
import sys
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import PROTOCOL_VERSION
from .actions import Executor, error
from .files import FileActionError, NotFound, TooLarge

MAX_REQUEST_BYTES = 16 * 1024 * 1024
DRAIN_LIMIT = 256 * 1024 * 1024


class SandboxState:
    """What every request handler shares: the token, the executor, liveness."""

    def __init__(self, token: str, executor: Executor) -> None:
        self.token = token
        self.executor = executor
        self.last_seen = time.monotonic()

    def touch(self) -> None:
        self.last_seen = time.monotonic()


class TCPSandboxServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: SandboxState) -> None:
        super().__init__(address, Handler)
        self.state = state


class UnixSandboxServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The same server on a Unix socket: for containers without a network, and faster."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, path: str | None, state: SandboxState, listen_fd: int | None = None) -> None:
        """Listen on ``path``, or on the already listening socket ``listen_fd`` (handed in by
        a parent that keeps the socket's path where the sandbox cannot reach it)."""
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
            super().__init__(path, Handler)
            os.chmod(path, 0o600)
        self.state = state


class Handler(BaseHTTPRequestHandler):
    server: TCPSandboxServer | UnixSandboxServer
    protocol_version = "HTTP/1.1"  # keep-alive: one connection serves many actions

    def setup(self) -> None:
        super().setup()
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
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value, ensure_ascii=False).encode("utf-8"))

    def _refuse(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _authorised(self) -> bool:
        given = self.headers.get("Authorization", "")
        expected = f"Bearer {self.server.state.token}"
        if hmac.compare_digest(given.encode(), expected.encode()):
            self.server.state.touch()
            return True
        self.close_connection = True  # the request body was not read
        self._refuse(HTTPStatus.UNAUTHORIZED, "missing or wrong sandbox token")
        return False

    def _body(self, limit: int) -> bytes | None:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            self._refuse(HTTPStatus.BAD_REQUEST, "Content-Length is not a number")
            return None
        if length > limit:
            if length <= DRAIN_LIMIT:  # read and drop it, so the client hears the answer
                remaining = length
                while remaining > 0:
                    chunk = self.rfile.read(min(remaining, 1 << 20))
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
        return self.rfile.read(length)

    def _query_path(self) -> str | None:
        values = parse_qs(urlsplit(self.path).query).get("path")
        if not values or not values[0]:
            self._refuse(HTTPStatus.BAD_REQUEST, "the 'path' query parameter is required")
            return None
        try:
            self.server.state.executor.files.paths.relative(values[0])
        except ValueError as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
            return None
        return values[0]

    # -- routes --------------------------------------------------------------------------

    def do_GET(self) -> None:
        route = urlsplit(self.path).path
        if route == "/alive":
            idle = round(time.monotonic() - self.server.state.last_seen, 3)
            alive = {"ok": True, "protocol": PROTOCOL_VERSION, "pid": os.getpid(), "idle": idle}
            self._json(HTTPStatus.OK, alive)
        elif route == "/download":
            if not self._authorised():
                return
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
        else:
            self._refuse(HTTPStatus.NOT_FOUND, f"no route {route}")

    def do_POST(self) -> None:
        route = urlsplit(self.path).path
        if route == "/heartbeat":
            if self._authorised():
                self._json(HTTPStatus.OK, {"ok": True})
            return
        if route not in ("/execute", "/upload"):
            self._refuse(HTTPStatus.NOT_FOUND, f"no route {route}")
            return
        if not self._authorised():
            return
        if route == "/upload":
            path = self._query_path()
            if path is None:
                self.close_connection = True  # the body was not read
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
            return
        body = self._body(MAX_REQUEST_BYTES)
        if body is None:
            return
        try:
            action = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._json(HTTPStatus.OK, error(f"the action is not JSON: {exc}", "invalid_action"))
            return
        try:
            observation = self.server.state.executor.execute(action)
        except Exception as exc:  # never let one action take the server down
            observation = error(f"the sandbox failed: {type(exc).__name__}: {exc}", "internal")
        self._json(HTTPStatus.OK, observation)


def serve(
    state: SandboxState,
    *,
    host: str,
    port: int,
    unix_socket: str | None = None,
    listen_fd: int | None = None,
) -> None:
    server: TCPSandboxServer | UnixSandboxServer
    if unix_socket or listen_fd is not None:
        server = UnixSandboxServer(unix_socket, state, listen_fd)
        where = str(server.server_address or unix_socket)
    else:
        server = TCPSandboxServer((host, port), state)
        where = str(server.server_address[1])
    # The parent reads this line to learn where to connect (port 0 picks a free port).
    print(f"CHRONICLE_SANDBOX_READY {where}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        state.executor.shell.close()
