"""Slow and hostile clients against a real `chronicle serve`, over raw sockets as an attacker
sends them: request heads dribbled a byte at a time (slowloris), a body slower than any real
client, more connections than the cap, and JSON nested 100,000 deep.

Before, uvicorn held every dribbling socket for as long as it kept sending (400 were held for
45 s), nothing capped the connections, and the deep body was a 500 (RecursionError in the JSON
decoder), also unauthenticated on ``POST /api/login``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from tests.support.chronicle_server import ServerProcess

PROBLEM = "application/problem+json"
#: How late after its deadline the server may close a slow client on a loaded machine.
SLACK = 3.0


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def address(server: ServerProcess) -> tuple[str, int]:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


@dataclass
class Dribbler:
    """One attacker's socket: it sends ``start`` at once, then ``drip`` a byte at a time."""

    sock: socket.socket
    drip: bytes
    received: bytes = b""
    closed_after: float | None = None
    sent: int = 0

    def tick(self, elapsed: float) -> None:
        """Read what the server sent (noting when it closed), then send one more byte."""
        if self.closed_after is not None:
            return
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    self.closed_after = elapsed
                    return
                self.received += data
        except BlockingIOError:
            pass
        except OSError:
            self.closed_after = elapsed
            return
        try:
            self.sock.send(self.drip[self.sent % len(self.drip) : self.sent % len(self.drip) + 1])
            self.sent += 1
        except BlockingIOError:
            pass
        except OSError:
            self.closed_after = elapsed


@dataclass
class Dribbling:
    """Many dribblers ticked by a thread of their own every ``interval`` seconds."""

    dribblers: list[Dribbler]
    interval: float
    started: float = field(default_factory=time.monotonic)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            elapsed = time.monotonic() - self.started
            for dribbler in self.dribblers:
                dribbler.tick(elapsed)
            if all(d.closed_after is not None for d in self.dribblers):
                return
            self.stop.wait(self.interval)


@contextmanager
def dribbling(
    server: ServerProcess, count: int, start: bytes, drip: bytes, interval: float = 0.5
) -> Iterator[Dribbling]:
    dribblers = []
    for _ in range(count):
        sock = socket.create_connection(address(server), timeout=10)
        sock.sendall(start)
        sock.setblocking(False)
        dribblers.append(Dribbler(sock, drip))
    state = Dribbling(dribblers, interval)
    thread = threading.Thread(target=state.run, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        thread.join(timeout=10)
        for dribbler in dribblers:
            dribbler.sock.close()


def wait_closed(state: Dribbling, within: float) -> None:
    deadline = state.started + within
    while time.monotonic() < deadline:
        if all(d.closed_after is not None for d in state.dribblers):
            return
        time.sleep(0.1)


def test_dribbled_heads_are_answered_408_and_closed_while_others_are_served(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_header_timeout="2")
    head = b"GET /health/live HTTP/1.1\r\nHost: chronicle\r\n"
    with dribbling(server, 400, head, b"X-Slow: aaaaaaaaaaaaaaaa\r\n") as state:
        # while they dribble, a client that sends whole requests is answered at once
        for _ in range(10):
            started = time.monotonic()
            assert httpx.get(f"{server.url}/health/live", timeout=5).status_code == 200
            assert time.monotonic() - started < 1.0
            time.sleep(0.1)
        wait_closed(state, within=2 + SLACK + 2)
        closed = [d.closed_after for d in state.dribblers]
    assert all(after is not None and after <= 2 + SLACK for after in closed), sorted(
        after or -1 for after in closed
    )
    answered = [d.received for d in state.dribblers]
    assert all(reply.startswith(b"HTTP/1.1 408 ") for reply in answered), answered[0]
    assert b"application/problem+json" in answered[0]
    # a connection that sends nothing at all is closed by the same deadline
    with socket.create_connection(address(server), timeout=2 + SLACK) as silent:
        started = time.monotonic()
        reply = silent.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408 ")
        assert time.monotonic() - started <= 2 + SLACK
    assert httpx.get(f"{server.url}/health/live").status_code == 200


def test_a_body_slower_than_the_body_timeout_is_cut(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_body_timeout="2")
    head = (
        b"POST /api/login HTTP/1.1\r\nHost: chronicle\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n"
    )
    with dribbling(server, 20, head, b'{"token": "' + b"a" * 1000) as state:
        assert httpx.get(f"{server.url}/health/live", timeout=5).status_code == 200
        wait_closed(state, within=2 + SLACK + 2)
        closed = [d.closed_after for d in state.dribblers]
    assert all(after is not None and after <= 2 + SLACK for after in closed), closed
    assert all(d.received.startswith(b"HTTP/1.1 408 ") for d in state.dribblers)
    # a route that answers before reading the body (401: no credentials) does not let the
    # body dribble on: the connection is closed at the same deadline
    unauthenticated = head.replace(b"/api/login", b"/api/sessions")
    with dribbling(server, 5, unauthenticated, b'{"task": "' + b"a" * 1000) as state:
        wait_closed(state, within=2 + SLACK + 2)
        closed = [d.closed_after for d in state.dribblers]
    assert all(after is not None and after <= 2 + SLACK for after in closed), closed
    assert all(d.received.startswith(b"HTTP/1.1 401 ") for d in state.dribblers)
    # a body that arrives in time is read as ever
    refused = httpx.post(f"{server.url}/api/login", json={"token": "chr_not_a_token"})
    assert refused.status_code == 401


def test_connections_over_the_cap_are_refused_at_once_and_those_open_carry_on(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(
        server_max_connections="12",
        server_max_connections_per_address="12",
        server_header_timeout="30",
    )
    token = server.token("ada")
    session = httpx.post(
        f"{server.url}/api/sessions", headers=bearer(token), json={"task": "stay"}
    ).json()["id"]
    with (
        httpx.Client(headers=bearer(token), timeout=10) as kept,
        httpx.Client(timeout=30) as streaming,
        streaming.stream(
            "GET",
            f"{server.url}/api/sessions/{session}/stream",
            headers={**bearer(token), "Accept": "text/event-stream"},
        ) as stream,
    ):
        lines = stream.iter_lines()
        assert kept.get(f"{server.url}/api/me").status_code == 200  # its connection stays open
        # the stream and the kept-alive client hold two places; ten idle sockets fill the rest
        idle = [socket.create_connection(address(server)) for _ in range(10)]
        try:
            time.sleep(0.3)
            started = time.monotonic()
            refused = httpx.get(f"{server.url}/health/live", timeout=5)
            assert time.monotonic() - started < 1.5
            assert refused.status_code == 503, refused.text
            assert refused.headers["content-type"] == PROBLEM
            assert refused.headers["retry-after"] == "1"
            assert "12 connections" in refused.json()["detail"]
            # the connections already open are served
            assert kept.get(f"{server.url}/api/me").status_code == 200
        finally:
            for sock in idle[:5]:
                sock.close()
        time.sleep(0.3)
        # with places free again, new connections are served, and the stream was never cut
        answer = httpx.post(
            f"{server.url}/api/sessions/{session}/messages",
            headers=bearer(token),
            json={"content": "still there?"},
        )
        assert answer.status_code == 202, answer.text
        seen = ""
        for line in lines:
            seen += line + "\n"
            if "still there?" in line:
                break
        assert "still there?" in seen
        for sock in idle[5:]:
            sock.close()


def deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def test_json_nested_100000_deep_is_a_400_and_the_server_serves_on(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_max_body_bytes="1000000")
    body = b'{"token": ' + deep(100_000) + b"}"
    login = httpx.post(
        f"{server.url}/api/login", content=body, headers={"content-type": "application/json"}
    )
    assert login.status_code == 400, login.text
    assert login.headers["content-type"] == PROBLEM
    assert "nested" in login.json()["detail"]
    token = server.token("ada")
    session = httpx.post(
        f"{server.url}/api/sessions", headers=bearer(token), json={"task": "t"}
    ).json()["id"]
    message = httpx.post(
        f"{server.url}/api/sessions/{session}/messages",
        content=b'{"content": ' + deep(100_000) + b"}",
        headers={**bearer(token), "content-type": "application/json"},
    )
    assert message.status_code == 400, message.text
    assert message.headers["content-type"] == PROBLEM
    # just below Python's recursion limit, where the decoder itself would not fail
    shallower = httpx.post(
        f"{server.url}/api/sessions",
        content=b'{"task": "t", "limits": ' + deep(900) + b"}",
        headers={**bearer(token), "content-type": "application/json"},
    )
    assert shallower.status_code == 400, shallower.text
    assert httpx.get(f"{server.url}/api/me", headers=bearer(token)).status_code == 200
    assert "Traceback" not in "".join(server.output)
