"""The sandbox's action server itself, around any runtime: a handler that fails answers only
its own request, a silent connection is closed, a flood of connections is bounded, a slow
reader is not cut off. The server runs as a process of its own (or, to break one of its
parts, in this process), and the tests speak raw HTTP to its socket.

Before: an error in the upload or download handler dropped the connection (which the client
took for a dead sandbox); a connection that went silent held a thread forever, and every
connection got a thread of its own, however many came. What every runtime must answer to a
bad request is in tests/contract/runtime/test_bad_requests.py.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from app.runtime.image import RUNTIME_IMAGE_DIR
from tests.support.sandbox_server import connect, exchange, sandbox_server, threads_of
from tests.support.waiting import until

# -- every route answers its own failure (the fault is injected: no known input causes one) --


@pytest.fixture
def sandbox_modules(monkeypatch: pytest.MonkeyPatch) -> dict[str, ModuleType]:
    monkeypatch.syspath_prepend(str(RUNTIME_IMAGE_DIR))
    names = ("actions", "files", "server", "shell")
    return {name: importlib.import_module(f"chronicle_sandbox.{name}") for name in names}


@pytest.fixture
def in_process_server(
    sandbox_modules: dict[str, ModuleType], tmp_path: Path
) -> Iterator[tuple[Any, httpx.Client]]:
    """The real server (real shell, real files) in this process, so a test can break a part."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shell = sandbox_modules["shell"].Shell(str(workspace), {"PATH": "/usr/bin:/bin"})
    files = sandbox_modules["files"].Files(str(workspace))
    executor = sandbox_modules["actions"].Executor(shell, files)
    server_module = sandbox_modules["server"]
    state = server_module.SandboxState("token", executor)
    server = server_module.UnixSandboxServer(str(tmp_path / "s.sock"), state)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    client = httpx.Client(
        base_url="http://sandbox",
        headers={"Authorization": "Bearer token"},
        transport=httpx.HTTPTransport(uds=str(tmp_path / "s.sock")),
        timeout=10,
    )
    try:
        yield executor, client
    finally:
        client.close()
        server.shutdown()
        server.server_close()
        shell.close()


def broken(*args: object, **kwargs: object) -> Any:
    raise RuntimeError("a bug in the handler")


def test_a_failing_handler_answers_only_its_request(
    in_process_server: tuple[Any, httpx.Client],
) -> None:
    executor, client = in_process_server
    assert client.post("/upload", params={"path": "ok.txt"}, content=b"fine").status_code == 200

    executor.files.write_bytes = broken
    upload = client.post("/upload", params={"path": "a.txt"}, content=b"data")
    assert upload.status_code == 500 and "a bug in the handler" in upload.json()["error"]
    executor.files.read_bytes = broken
    download = client.get("/download", params={"path": "ok.txt"})
    assert download.status_code == 500 and "a bug in the handler" in download.json()["error"]
    executor.files.read = broken
    read = client.post("/execute", json={"kind": "file.read", "path": "ok.txt"})
    assert read.status_code == 200 and read.json()["kind"] == "error"
    for answer in (upload, download, read):  # the server closes it: the client must know
        assert answer.headers["connection"] == "close"
    assert "a bug in the handler" in read.json()["message"]
    executor.shell.run = broken
    ran = client.post("/execute", json={"kind": "run", "command": "true"})
    assert ran.status_code == 200 and ran.json()["kind"] == "error"

    del executor.files.read, executor.shell.run  # the methods of the class again
    again = client.post("/execute", json={"kind": "file.read", "path": "ok.txt"})
    assert again.json() == {"kind": "file.read.output", "path": "ok.txt", "content": "     1\tfine"}
    echoed = client.post("/execute", json={"kind": "run", "command": "echo alive"}).json()
    assert echoed["output"] == "alive\n"


# -- connections: idle ones time out, and there are never more threads than the bound -----


def test_a_silent_connection_is_closed(tmp_path: Path) -> None:
    with sandbox_server(tmp_path, "--idle-timeout", "1") as server:
        with connect(server.socket_path, timeout=10) as silent:
            started = time.monotonic()
            assert silent.recv(1) == b""  # closed by the server, not by our timeout
            assert time.monotonic() - started < 5
        with connect(server.socket_path, timeout=10) as slow:
            slow.sendall(b"GET /alive HTTP/1.1\r\n")  # ...and the rest of the request never
            started = time.monotonic()
            assert slow.recv(65536) == b""
            assert time.monotonic() - started < 5
        status, _ = exchange(server.socket_path, b"GET /alive HTTP/1.1\r\nHost: s\r\n\r\n")
        assert status == 200


async def test_a_flood_of_connections_is_bounded(tmp_path: Path) -> None:
    with sandbox_server(tmp_path, "--max-connections", "4", "--idle-timeout", "30") as server:
        pid = server.process.pid
        baseline = threads_of(pid)
        flood: list[socket.socket] = []
        refused = 0

        def one_more() -> bool:
            try:
                flood.append(connect(server.socket_path))
            except BlockingIOError:  # the listen queue is full: the server accepts first
                return False
            return True

        def alive() -> bool:
            try:
                status, _ = exchange(server.socket_path, b"GET /alive HTTP/1.1\r\nHost: s\r\n\r\n")
            except ConnectionError:
                return False
            return status == 200

        try:
            for _ in range(40):
                await until(one_more, timeout=10, what="a connection queued", interval=0.01)
            # Time for the server to accept what it will (and, unbounded, start a thread for
            # each): the quiet period is the check.
            await asyncio.sleep(0.5)
            assert threads_of(pid) <= baseline + 4  # before: one thread per connection
            for conn in flood[4:]:  # the ones over the bound were told so and closed
                conn.settimeout(5)
                answer = conn.recv(65536)
                if answer.startswith(b"HTTP/1.1 503"):
                    refused += 1
            assert refused == 36
        finally:
            for conn in flood:
                conn.close()
        # The held slots come free once their connections are gone (the server says nothing).
        await until(alive, timeout=10, what="a slot free again", interval=0.1)
        auth = f"Authorization: Bearer {server.token}\r\n"
        body = b'{"kind": "run", "command": "echo ok"}'
        request = (
            f"POST /execute HTTP/1.1\r\nHost: s\r\n{auth}Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        status, answer = exchange(server.socket_path, request)
        assert status == 200 and b'"ok\\n"' in answer


def test_a_slow_reader_is_not_cut_off(tmp_path: Path) -> None:
    """The idle timeout bounds a stall, not a transfer: a 3 MiB download read slowly (3 s)
    arrives whole with a 1 s timeout (before the answer went out in chunks, one ``sendall``
    of it had 1 s in all)."""
    with sandbox_server(tmp_path, "--idle-timeout", "1") as server:
        data = os.urandom(3 * 1024 * 1024)
        (tmp_path / "ws" / "big.bin").write_bytes(data)
        request = (
            f"GET /download?path=big.bin HTTP/1.1\r\nHost: s\r\n"
            f"Authorization: Bearer {server.token}\r\n\r\n"
        ).encode()
        with connect(server.socket_path, timeout=10) as conn:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            conn.sendall(request)
            received = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                received += chunk
                if received.endswith(data[-64:]) and len(received) > len(data):
                    break
                time.sleep(0.06)  # a slow reader: the test
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and body == data
