"""The sandbox action server as a process of its own, and raw HTTP to it.

For tests of what a well-behaved client never sends (a negative ``Content-Length``, a
connection that goes silent, a flood of connections): they talk to the server's socket
byte by byte instead of through ``SandboxClient``.
"""

from __future__ import annotations

import http.client
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.runtime.image import RUNTIME_IMAGE_DIR


@dataclass(frozen=True)
class ServerProcess:
    process: subprocess.Popen[str]
    socket_path: str
    token: str


@contextmanager
def sandbox_server(tmp_path: Path, *options: str) -> Iterator[ServerProcess]:
    """``python -m chronicle_sandbox`` on a Unix socket under ``tmp_path``, with ``options``."""
    token = secrets.token_urlsafe(16)
    token_file = tmp_path / "server-token"
    token_file.write_text(token)
    socket_path = str(tmp_path / "server.sock")
    command = [sys.executable, "-m", "chronicle_sandbox", "--workspace", str(tmp_path / "ws")]
    process = subprocess.Popen(
        [*command, "--unix-socket", socket_path, "--token-file", str(token_file), *options],
        cwd=RUNTIME_IMAGE_DIR,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert ready.startswith("CHRONICLE_SANDBOX_READY"), f"the server said {ready!r}"
        yield ServerProcess(process, socket_path, token)
    finally:
        process.kill()
        process.wait()


def connect(socket_path: str, timeout: float = 10.0) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    conn.connect(socket_path)
    return conn


def exchange(socket_path: str, request: bytes, timeout: float = 10.0) -> tuple[int, bytes]:
    """Send ``request`` as it is on a new connection; the answer's status and body.

    ``TimeoutError`` when the server does not answer within ``timeout`` seconds.
    """
    with connect(socket_path, timeout) as conn:
        conn.sendall(request)
        response = http.client.HTTPResponse(conn)
        response.begin()
        return response.status, response.read()


def threads_of(pid: int) -> int:
    """How many threads the process ``pid`` has now (Linux)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError(f"no thread count for {pid}")
