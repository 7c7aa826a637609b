"""A server given SIGTERM while it is busy exits within a few seconds: with live streams (SSE
and WebSocket), an idle keep-alive connection, a request whose body never finishes arriving,
and a session its worker ran.

Before, uvicorn's graceful timeout was 10 s, and a request still waiting for its body (a
client that never finishes sending it) held the exit that long: this test measured 11.4 s.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from websockets.sync.client import connect

from tests.support.chronicle_server import ServerProcess

#: What "a few seconds" means here (uvicorn's graceful timeout alone was 10 s).
EXIT_WITHIN = 8.0


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_sigterm_with_streams_idle_and_half_sent_requests_exits_within_seconds(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    token = server.token("ada")
    headers = bearer(token)
    host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
    assert host is not None and port is not None
    session = httpx.post(
        f"{server.url}/api/sessions", headers=headers, json={"task": "hold on"}
    ).json()["id"]

    # an SSE stream, read in a thread until the server ends it
    sse_ready = threading.Event()

    def follow() -> None:
        with (
            httpx.Client(timeout=60) as client,
            client.stream(
                "GET",
                f"{server.url}/api/sessions/{session}/stream",
                headers={**headers, "Accept": "text/event-stream"},
            ) as response,
        ):
            sse_ready.set()
            for _ in response.iter_lines():
                pass

    sse = threading.Thread(target=follow, daemon=True)
    sse.start()
    assert sse_ready.wait(30)
    ws = connect(
        f"ws://{host}:{port}/api/sessions/{session}/stream",
        additional_headers=headers,
        open_timeout=30,
    )
    # an idle keep-alive connection, and a request whose body never finishes arriving
    idle = socket.create_connection((host, port))
    idle.sendall(f"GET /health/live HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    assert idle.recv(4096).startswith(b"HTTP/1.1 200")
    half = socket.create_connection((host, port))
    half.sendall(
        f"POST /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"task": '.encode()
    )
    time.sleep(1)
    try:
        started = time.monotonic()
        code = server.stop(timeout=60)
        took = time.monotonic() - started
        assert took < EXIT_WITHIN, f"the server took {took:.1f} s to exit"
        assert code == 0, "".join(server.output)
    finally:
        for connection in (idle, half):
            connection.close()
        ws.close()
        sse.join(timeout=10)
