"""A WebSocket upgrade request that carries a body, over a raw socket as an attacker sends it to
a real `chronicle serve`: uvicorn handed the connection to its WebSocket protocol, which never
answered such a handshake, and the request deadlines had stopped at the upgrade, so each socket
was held for good, without a token. The handshake now has the head's deadline."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from websockets.sync.client import connect

from tests.support.chronicle_server import ServerProcess

#: How late after its deadline the server may drop the socket on a loaded machine.
SLACK = 3.0
UPGRADE = (
    "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
)


def held_for(server: ServerProcess, request: bytes, limit: float) -> float | None:
    """Seconds until the server closed the socket (None: still open after ``limit``)."""
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=limit) as sock:
        sock.sendall(request)
        started = time.monotonic()
        try:
            while sock.recv(65536):
                pass
        except TimeoutError:
            return None
        except ConnectionResetError:
            pass
        return time.monotonic() - started


def test_an_upgrade_with_a_body_is_dropped_at_the_head_deadline(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_header_timeout="2")
    token = server.token("ivo")
    path = f"/api/sessions/{uuid.uuid4()}/stream"
    requests = [
        f"GET {path} HTTP/1.1\r\nHost: chronicle\r\nContent-Length: 2\r\n{UPGRADE}\r\nab",
        f"GET {path} HTTP/1.1\r\nHost: chronicle\r\nContent-Length: 9\r\n{UPGRADE}\r\nab",
        f"GET {path} HTTP/1.1\r\nHost: chronicle\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: 2\r\n{UPGRADE}\r\nab",
    ]
    for request in requests:
        took = held_for(server, request.encode(), limit=2 + SLACK + 5)
        assert took is not None and took <= 2 + SLACK, (request, took)
    # a WebSocket that is answered is not cut by the deadline
    session = httpx.post(
        f"{server.url}/api/sessions",
        headers={"Authorization": f"Bearer {token}"},
        json={"task": "stay"},
    ).json()["id"]
    with connect(
        f"{server.url.replace('http', 'ws', 1)}/api/sessions/{session}/stream",
        additional_headers={"Authorization": f"Bearer {token}"},
    ) as websocket:
        first = websocket.recv(timeout=10)
        time.sleep(2 + SLACK)
        websocket.ping().wait(timeout=5)
    assert first
