"""One address cannot take every connection, over raw sockets against a real `chronicle serve`:
before, an unauthenticated client that kept ``server_max_connections`` sockets open (opening
each again when the header deadline closed it) kept every other client out with 503. Now one
address holds at most ``server_max_connections_per_address``; others are served meanwhile."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from tests.support.chronicle_server import ServerProcess


def address(server: ServerProcess) -> tuple[str, int]:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def connect_from(server: ServerProcess, source: str) -> socket.socket:
    return socket.create_connection(address(server), timeout=5, source_address=(source, 0))


def get_from(server: ServerProcess, source: str, path: str = "/health/live") -> bytes:
    with connect_from(server, source) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: chronicle\r\nConnection: close\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_one_address_cannot_fill_the_cap_and_others_are_served(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(
        server_max_connections="10",
        server_max_connections_per_address="4",
        server_header_timeout="30",
    )
    # WebSocket upgrades (refused: no credentials) give their places back when they close
    for _ in range(6):
        path = f"/api/sessions/{uuid.uuid4()}/stream"
        with connect_from(server, "127.0.0.1") as sock:
            sock.sendall(
                f"GET {path} HTTP/1.1\r\nHost: chronicle\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode()
            )
            assert sock.recv(4096).startswith(b"HTTP/1.1 ")
    time.sleep(0.3)
    held = [connect_from(server, "127.0.0.1") for _ in range(4)]
    try:
        time.sleep(0.3)
        refused = get_from(server, "127.0.0.1")
        assert refused.startswith(b"HTTP/1.1 503 "), refused[:200]
        assert b"this address has 4 connections open" in refused
        assert get_from(server, "127.0.0.2").startswith(b"HTTP/1.1 200 ")  # another address
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert httpx.get(f"{server.url}/health/live").status_code == 200  # the places came back


def test_a_proxy_the_operator_names_is_not_limited(serve: Callable[..., ServerProcess]) -> None:
    server = serve(
        server_max_connections="10",
        server_max_connections_per_address="2",
        server_header_timeout="30",
        server_forwarded_allow_ips="127.0.0.1",
    )
    held = [connect_from(server, "127.0.0.1") for _ in range(4)]
    try:
        time.sleep(0.3)
        assert get_from(server, "127.0.0.1").startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in held:
            sock.close()
