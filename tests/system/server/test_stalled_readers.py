"""Clients that ask and never read, over raw sockets as an attacker opens them against a real
`chronicle serve`: no credentials, a tiny receive window, requests for the public OpenAPI
document pipelined on each socket, and not a byte read. The request deadlines do not apply
(the requests arrived whole), so before, each socket held its place under the connection cap
for good, and a handful of them locked every other client out with 503."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from tests.support.chronicle_server import ServerProcess

#: How late after its deadline the server may drop a stalled client on a loaded machine.
SLACK = 5.0
REQUEST = b"GET /schema/openapi.json HTTP/1.1\r\nHost: chronicle\r\n\r\n"


def non_reader(server: ServerProcess) -> socket.socket:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # before connecting: the window
    sock.connect((parts.hostname, parts.port))
    sock.sendall(REQUEST * 200)
    return sock


def dropped(sock: socket.socket) -> bool:
    """Whether the server dropped the connection (a reset, or an end after what it sent)."""
    sock.settimeout(5)
    try:
        while sock.recv(1 << 20):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_clients_that_never_read_are_dropped_and_free_their_places(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(
        server_max_connections="4",
        server_max_connections_per_address="4",
        server_write_timeout="2",
        server_header_timeout="2",
    )
    assert httpx.get(f"{server.url}/schema/openapi.json").status_code == 200
    stalled = [non_reader(server) for _ in range(4)]
    try:
        time.sleep(0.5)
        assert httpx.get(f"{server.url}/health/live").status_code == 503  # the cap is full
        started = time.monotonic()
        while time.monotonic() - started < 2 + SLACK:
            if httpx.get(f"{server.url}/health/live").status_code == 200:
                break
            time.sleep(0.25)
        else:
            raise AssertionError("the clients that never read still hold every connection")
        assert all(dropped(sock) for sock in stalled)
    finally:
        for sock in stalled:
            sock.close()


def test_a_slow_reader_keeps_its_response(serve: Callable[..., ServerProcess]) -> None:
    """A client that reads, however slowly, is never cut: only a buffer nobody drains is."""
    server = serve(server_write_timeout="2")
    whole = httpx.get(f"{server.url}/schema/openapi.json").content
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect((parts.hostname, parts.port))
    sock.sendall(REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    received = b""
    sock.settimeout(10)
    with sock:
        while chunk := sock.recv(4096):
            received += chunk
            time.sleep(0.05)  # about 80 KB/s at most
    assert received.endswith(whole)
